package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/conformance"
	"github.com/boson-go/boson/conformance/testenv"
	"github.com/boson-go/boson/core"
)

// pooledPool opens a pool of at most 4 connections through a transaction
// pooler: statements unnamed, their descriptions cached.
func pooledPool(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 4
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// newPooledBackend returns a migrated backend whose pool goes through the
// pooler at bouncer, in a fresh schema dropped at cleanup; listen is its
// ListenConnString.
func newPooledBackend(t testing.TB, bouncer string, opts postgres.Options) *postgres.Backend {
	t.Helper()
	opts.Pooled = true
	return newBackendOn(t, pooledPool(t, bouncer), opts)
}

// TestConformanceThroughPgBouncer runs the whole conformance suite on
// backends whose pools go through PgBouncer in transaction mode; the
// listener connects straight to the server (ListenConnString). Under the
// race detector it runs in a child built without it: the store's code is
// TestConformance's, which runs under the race detector; only the
// connection path differs.
func TestConformanceThroughPgBouncer(t *testing.T) {
	t.Parallel()
	if testenv.WithoutRace(t) {
		return
	}
	direct := sqltest.PostgresURL(t)
	bouncer := sqltest.PgBouncer(t, direct)
	h := harness()
	h.Name = "postgres-pgbouncer"
	// The races of FlowExact prove the claim's exactness, which the
	// connection path does not change: TestConformance runs them at full
	// size, and here a quarter of it shows that they hold through
	// PgBouncer too.
	h.FlowExactJobs = 500
	h.New = func(t testing.TB, o conformance.Options) core.QueueBackend {
		return newPooledBackend(t, bouncer, postgres.Options{Clock: o.Clock, Limits: o.Limits, ListenConnString: direct})
	}
	conformance.Run(t, h)
}

// TestPgBouncerWithoutListenerPolls has no session connection to listen
// on: a subscriber wakes on its polling tick after another backend's
// enqueue, and claims the job.
func TestPgBouncerWithoutListenerPolls(t *testing.T) {
	bouncer := sqltest.PgBouncer(t, sqltest.PostgresURL(t))
	ctx := context.Background()
	worker := newPooledBackend(t, bouncer, postgres.Options{PollInterval: 50 * time.Millisecond})
	other, err := postgres.New(worker.Pool(), postgres.Options{Schema: worker.Schema(), Pooled: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	wake, stop := worker.Subscribe("q")
	defer stop()
	res, err := other.Enqueue(ctx, []core.EnqueueRequest{{Queue: "q", Task: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(5 * time.Second):
		t.Fatal("the subscriber did not wake")
	}
	jobs, err := worker.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 10, LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].ID != res[0].Job.ID {
		t.Fatalf("claim returned %v, want job %s", jobs, res[0].Job.ID)
	}
}

// TestPooledRefusesNamedStatements: a pool that prepares named statements
// cannot go through a transaction pooler, and New says so.
func TestPooledRefusesNamedStatements(t *testing.T) {
	pool := sqltest.Pool(t, sqltest.PostgresURL(t), 1)
	_, err := postgres.New(pool, postgres.Options{Pooled: true})
	if !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("New with Pooled on a cache_statement pool: %v, want ErrInvalidArgument", err)
	}
}
