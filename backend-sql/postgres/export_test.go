package postgres

import "context"

// MigrateTo applies the migrations up to version upTo, for tests that
// build the schema of an earlier release.
func MigrateTo(ctx context.Context, b *Backend, upTo int) error { return b.migrateTo(ctx, upTo) }
