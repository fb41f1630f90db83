package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/core"
)

// every calls each method of b once and returns the errors.
func every(ctx context.Context, b core.QueueBackend) []error {
	lease := core.Lease{JobID: "01J0000000000000000000000", Token: 1}
	_, e1 := b.Enqueue(ctx, []core.EnqueueRequest{{Task: "t"}})
	_, e2 := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 1, LeaseTTL: time.Second})
	_, e3 := b.Complete(ctx, []core.Completion{{Lease: lease}})
	_, e4 := b.Heartbeat(ctx, lease, time.Second)
	_, e5 := b.GetJob(ctx, lease.JobID)
	_, e6 := b.ListJobs(ctx, core.JobFilter{})
	_, e7 := b.Rescue(ctx, core.RescueRequest{Limit: 10})
	_, e8 := b.ListQueues(ctx)
	return []error{e1, e2, e3, e4, e5, e6, e7, e8}
}

func TestClosedPoolGivesErrors(t *testing.T) {
	url := sqltest.PostgresURL(t)
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	b, err := postgres.New(pool, postgres.Options{Schema: "boson_closed_pool"})
	if err != nil {
		t.Fatal(err)
	}
	pool.Close()
	for i, err := range every(context.Background(), b) {
		if err == nil {
			t.Errorf("call %d on a closed pool: no error", i)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for i, err := range every(context.Background(), b) {
		if !errors.Is(err, core.ErrClosed) {
			t.Errorf("call %d after Close: %v, want ErrClosed", i, err)
		}
	}
}

func TestServerDownGivesErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const dead = "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2"
	if _, err := postgres.Open(ctx, dead, postgres.Options{}); err == nil {
		t.Fatal("Open of a server that is down: no error")
	}
	pool, err := pgxpool.New(ctx, dead)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	b, err := postgres.New(pool, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Migrate(ctx); err == nil {
		t.Error("Migrate against a server that is down: no error")
	}
	for i, err := range every(ctx, b) {
		if err == nil {
			t.Errorf("call %d against a server that is down: no error", i)
		}
	}
}

func TestBadOptions(t *testing.T) {
	for _, schema := range []string{"Bad", "1abc", `x"; DROP TABLE y; --`, "a-b", "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghij"} {
		if _, err := postgres.Open(context.Background(), sqltest.DefaultPostgresURL, postgres.Options{Schema: schema}); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("schema %q: %v, want ErrInvalidArgument", schema, err)
		}
	}
	if _, err := postgres.New(nil, postgres.Options{}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("nil pool: %v", err)
	}
}

// TestServerRestart restarts a server the test owns in the middle of the
// work: calls fail with errors while it is down, leases taken before
// survive, the listener reconnects, and every job completes exactly once.
func TestServerRestart(t *testing.T) {
	srv := sqltest.StartPGServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, err := postgres.Open(ctx, srv.URL(), postgres.Options{PollInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 200
	sqltest.EnqueueAll(t, b, sqltest.Jobs("mp", n))
	sig, stop := b.Subscribe("mp")
	defer stop()

	jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "mp", WorkerID: "w", Limit: 50, LeaseTTL: time.Hour})
	if err != nil || len(jobs) != 50 {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	complete := func(jobs []core.Job) error {
		items := make([]core.Completion, len(jobs))
		for i, j := range jobs {
			items[i] = core.Completion{Lease: j.Lease}
		}
		errs, err := b.Complete(ctx, items)
		if err != nil {
			return err
		}
		return errors.Join(errs...)
	}
	if err := complete(jobs[:25]); err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	for i, err := range every(ctx, b) {
		if err == nil {
			t.Errorf("call %d while the server is down: no error", i)
		}
	}
	if err := complete(jobs[25:]); err == nil {
		t.Fatal("Complete while the server is down: no error")
	}
	srv.Start()

	// The pool replaces its dead connections; the first calls may still
	// meet one.
	var lastErr error
	for range 20 {
		if lastErr = complete(jobs[25:]); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("Complete after the restart: %v", lastErr)
	}

	// The listener reconnects by itself: an enqueue wakes the subscriber
	// (polling ticks are off).
	drainSignals(sig)
	if _, err := b.Enqueue(ctx, sqltest.Jobs("mp", 1)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sig:
	case <-time.After(30 * time.Second):
		t.Fatal("no notification after the restart")
	}

	done, err := sqltest.Drain(ctx, b, "mp", "w2", 40)
	if err != nil {
		t.Fatal(err)
	}
	if done != n+1-50 {
		t.Fatalf("drained %d jobs, want %d", done, n+1-50)
	}
	var succeeded, runs int64
	s := `"` + b.Schema() + `".`
	if err := b.Pool().QueryRow(ctx, "SELECT count(*) FROM "+s+"jobs WHERE state = 'succeeded'").Scan(&succeeded); err != nil {
		t.Fatal(err)
	}
	if err := b.Pool().QueryRow(ctx, "SELECT count(*) FROM "+s+"runs WHERE status = 'succeeded'").Scan(&runs); err != nil {
		t.Fatal(err)
	}
	if succeeded != n+1 || runs != n+1 {
		t.Fatalf("succeeded jobs %d, succeeded runs %d, want %d", succeeded, runs, n+1)
	}
}

func drainSignals(sig <-chan struct{}) {
	for {
		select {
		case <-sig:
		default:
			return
		}
	}
}
