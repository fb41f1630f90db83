package postgres_test

import (
	"context"
	"testing"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/postgres"
)

func TestTxCancelRacesWorker(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, postgres.Options{})
	sqltest.TxCancelRacesWorker(t, b, func() (any, func() error, func() error) {
		tx, err := b.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback(ctx) })
		return tx, func() error { return tx.Commit(ctx) }, func() error { return tx.Rollback(ctx) }
	})
}
