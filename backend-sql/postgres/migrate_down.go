package postgres

import (
	"context"

	"github.com/boson-go/boson/backend-sql/internal/engine"
)

// MigrationStatus is one schema version as the store and this build see
// it: applied or pending, when it was applied, and whether
// [Backend.MigrateDown] can undo it.
type MigrationStatus = engine.MigrationStatus

// ErrIrreversible marks a [Backend.MigrateDown] refused because a version
// it would have to undo has no safe down step. It wraps
// core.ErrInvalidState.
var ErrIrreversible = engine.ErrIrreversible

// MigrationStatus returns every version this build embeds and every
// version the schema records (a newer build's, too), in version order.
// It only reads: it neither creates the schema nor takes the migration
// lock.
func (b *Backend) MigrationStatus(ctx context.Context) ([]MigrationStatus, error) {
	return b.e.MigrationStatus(ctx, "postgres")
}

// MigrateDown undoes every applied version above to, newest first, in one
// transaction under the advisory lock that [Backend.Migrate] takes. It
// changes nothing, and returns an error wrapping [ErrIrreversible] that
// names each version and why, when any of those versions cannot be undone
// safely. It returns the versions it undid. Never run it while processes
// of a build that needs those versions run: they would fail, and they
// apply the versions again when they next call Migrate.
func (b *Backend) MigrateDown(ctx context.Context, to int) ([]int, error) {
	return b.e.MigrateDown(ctx, "postgres", to, func(ctx context.Context, q engine.Querier) error {
		// The same key as Migrate's, so that up and down take turns.
		_, err := q.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", "boson.migrate."+b.schema)
		return err
	})
}
