package sqliteq_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/sqliteq"
)

func TestConcurrentIdempotency(t *testing.T) {
	a, b := twoBackends(t, sqliteq.Options{})
	sqltest.ConcurrentIdempotency(t, a, b)
}

func TestConcurrentMaxInFlight(t *testing.T) {
	a, b := twoBackends(t, sqliteq.Options{})
	sqltest.ConcurrentMaxInFlight(t, a, b)
}

func TestRefusedTxEnqueueKeepsCallerTx(t *testing.T) {
	ctx := context.Background()
	b, err := sqliteq.Open(ctx, filepath.Join(t.TempDir(), "tx.db"), sqliteq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.DB().ExecContext(ctx, "CREATE TABLE notes (body TEXT)"); err != nil {
		t.Fatal(err)
	}
	sqltest.RefusedTxEnqueue(t, b, func() (any, func() error, func() error) {
		tx, err := b.BeginTx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback() })
		exec := func() error { _, err := tx.ExecContext(ctx, "INSERT INTO notes VALUES ('kept')"); return err }
		return tx, exec, tx.Commit
	})
	var n int
	if err := b.DB().QueryRowContext(ctx, "SELECT count(*) FROM notes").Scan(&n); err != nil || n != 1 {
		t.Fatalf("notes: %d, %v; want the caller's row", n, err)
	}
}

// TestBulkBesideCompletions runs the bulk steps and the completions on one
// backend: SQLite has one writer, so the two cannot deadlock, and two
// processes on one file would wait for each other up to the busy bound.
func TestBulkBesideCompletions(t *testing.T) {
	b := newBackend(t, sqliteq.Options{})
	sqltest.BulkBesideCompletions(t, b, b)
}
