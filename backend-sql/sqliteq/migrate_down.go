package sqliteq

import (
	"context"

	"github.com/boson-go/boson/backend-sql/internal/engine"
)

// MigrationStatus is one schema version as the database and this build
// see it: applied or pending, when it was applied, and whether
// [Backend.MigrateDown] can undo it.
type MigrationStatus = engine.MigrationStatus

// ErrIrreversible marks a [Backend.MigrateDown] refused because a version
// it would have to undo has no safe down step. It wraps
// core.ErrInvalidState.
var ErrIrreversible = engine.ErrIrreversible

// MigrationStatus returns every version this build embeds and every
// version the database records (a newer build's, too), in version order.
// It only reads.
func (b *Backend) MigrationStatus(ctx context.Context) ([]MigrationStatus, error) {
	return b.e.MigrationStatus(ctx, "sqlite")
}

// MigrateDown undoes every applied version above to, newest first, in one
// IMMEDIATE transaction, as [Backend.Migrate] applies them. It changes
// nothing, and returns an error wrapping [ErrIrreversible] that names each
// version and why, when any of those versions cannot be undone safely;
// no SQLite migration of this build can be. It returns the versions it
// undid.
func (b *Backend) MigrateDown(ctx context.Context, to int) ([]int, error) {
	return b.e.MigrateDown(ctx, "sqlite", to, nil)
}
