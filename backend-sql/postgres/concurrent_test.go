package postgres_test

import (
	"context"
	"testing"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/postgres"
)

// twoBackends returns two backends on one schema, each with its own pool,
// as two processes would have.
func twoBackends(t *testing.T) (*postgres.Backend, *postgres.Backend) {
	a := newBackend(t, postgres.Options{})
	pool := sqltest.Pool(t, sqltest.PostgresURL(t), 4)
	b, err := postgres.New(pool, postgres.Options{Schema: a.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return a, b
}

func TestConcurrentIdempotency(t *testing.T) {
	a, b := twoBackends(t)
	sqltest.ConcurrentIdempotency(t, a, b)
}

func TestConcurrentMaxInFlight(t *testing.T) {
	a, b := twoBackends(t)
	sqltest.ConcurrentMaxInFlight(t, a, b)
}

func TestRefusedTxEnqueueKeepsCallerTx(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, postgres.Options{})
	table := `"` + b.Schema() + `".notes`
	if _, err := b.Pool().Exec(ctx, "CREATE TABLE "+table+" (body text)"); err != nil {
		t.Fatal(err)
	}
	sqltest.RefusedTxEnqueue(t, b, func() (any, func() error, func() error) {
		tx, err := b.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback(ctx) })
		exec := func() error { _, err := tx.Exec(ctx, "INSERT INTO "+table+" VALUES ('kept')"); return err }
		return tx, exec, func() error { return tx.Commit(ctx) }
	})
	var n int
	if err := b.Pool().QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil || n != 1 {
		t.Fatalf("notes: %d, %v; want the caller's row", n, err)
	}
}

func TestBulkBesideCompletions(t *testing.T) {
	a, b := twoBackends(t)
	sqltest.BulkBesideCompletions(t, a, b)
}
