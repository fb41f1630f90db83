package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/postgres"
)

func TestAwait(t *testing.T) {
	sqltest.Await(t, func(t *testing.T) sqltest.AwaitBackend { return newBackend(t, postgres.Options{}) })
}

// TestMigrateAwaitDown undoes migration 8 (and 9 and 10 after it) with a wait
// stored, and applies them again.
func TestMigrateAwaitDown(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, postgres.Options{})
	sqltest.AwaitDown(t, b, func() error {
		undone, err := b.MigrateDown(ctx, 7)
		if err == nil && !slices.Equal(undone, []int{10, 9, 8}) {
			err = fmt.Errorf("down to 7 undid %v", undone)
		}
		return err
	}, func() error { return b.Migrate(ctx) })
}
