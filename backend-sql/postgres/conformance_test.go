package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/conformance"
	"github.com/boson-go/boson/core"
)

// newBackend returns a migrated backend in a fresh schema on a small pool;
// the schema is dropped at cleanup.
func newBackend(t testing.TB, opts postgres.Options) *postgres.Backend {
	t.Helper()
	return newBackendOn(t, sqltest.Pool(t, sqltest.PostgresURL(t), 4), opts)
}

// newBackendOn returns a migrated backend on pool in a fresh schema,
// dropped at cleanup.
func newBackendOn(t testing.TB, pool *pgxpool.Pool, opts postgres.Options) *postgres.Backend {
	t.Helper()
	opts.Schema = sqltest.Schema(t, pool)
	b, err := postgres.New(pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if err := b.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b
}

func harness() conformance.Harness {
	return conformance.Harness{
		Name: "postgres",
		New: func(t testing.TB, o conformance.Options) core.QueueBackend {
			return newBackend(t, postgres.Options{Clock: o.Clock, Limits: o.Limits})
		},
		Capabilities:  conformance.Capabilities{Notify: true, TxEnqueue: true, TxControl: true, Runs: true, Search: true, Tasks: true, Delete: true, AtomicBulk: true, Flow: true, Declare: true, Await: true},
		FlowExactJobs: exactJobs,
		BeginTx: func(ctx context.Context, t testing.TB, b core.QueueBackend) (any, func() error, func() error) {
			tx, err := b.(*postgres.Backend).Pool().Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return tx, func() error { return tx.Commit(ctx) }, func() error { return tx.Rollback(ctx) }
		},
	}
}

func TestConformance(t *testing.T) {
	conformance.Run(t, harness())
}

func BenchmarkConformance(b *testing.B) {
	conformance.Bench(b, harness())
}
