package sqliteq_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/sqliteq"
)

func TestAwait(t *testing.T) {
	sqltest.Await(t, func(t *testing.T) sqltest.AwaitBackend { return newBackend(t, sqliteq.Options{}) })
}

// TestMigrateAwaitDown undoes migration 5 (and 6 and 7 after it) with a wait
// stored, and applies them again.
func TestMigrateAwaitDown(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, sqliteq.Options{})
	sqltest.AwaitDown(t, b, func() error {
		undone, err := b.MigrateDown(ctx, 4)
		if err == nil && !slices.Equal(undone, []int{7, 6, 5}) {
			err = fmt.Errorf("down to 4 undid %v", undone)
		}
		return err
	}, func() error { return b.Migrate(ctx) })
}
