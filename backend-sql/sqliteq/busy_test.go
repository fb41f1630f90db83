package sqliteq_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/core"
)

// twoBackends opens two backends on one file, as two processes would.
func twoBackends(t *testing.T, opts sqliteq.Options) (*sqliteq.Backend, *sqliteq.Backend) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "busy.db")
	a, err := sqliteq.Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	if err := a.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := sqliteq.Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return a, b
}

// waitRetries waits until b retried at least once, failing if done
// delivers first (the call must not finish while the lock is held).
func waitRetries(t *testing.T, b *sqliteq.Backend, done <-chan error) {
	t.Helper()
	for b.BusyRetries() == 0 {
		select {
		case err := <-done:
			t.Fatalf("the call finished while another connection held the write lock: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
}

// TestBusyIsRetried holds the write lock on one connection while another
// backend on the same file enqueues and claims: both calls retry
// SQLITE_BUSY, then succeed once the lock is released, and the job is
// stored once and claimed once.
func TestBusyIsRetried(t *testing.T) {
	ctx := context.Background()
	a, b := twoBackends(t, sqliteq.Options{BusyTimeout: time.Millisecond, MaxBusyWait: time.Minute})

	tx, err := a.BeginTx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.Enqueue(ctx, sqltest.Jobs("q", 1))
		done <- err
	}()
	waitRetries(t, b, done)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("enqueue after the lock was released: %v", err)
	}

	tx, err = a.BeginTx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := b.BusyRetries()
	claimed := make(chan []core.Job, 1)
	go func() {
		jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 10, LeaseTTL: 10 * time.Minute})
		if err != nil {
			t.Error(err)
		}
		claimed <- jobs
	}()
	for b.BusyRetries() == before {
		select {
		case jobs := <-claimed:
			t.Fatalf("claim finished while the lock was held: %d jobs", len(jobs))
		case <-time.After(time.Millisecond):
		}
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if jobs := <-claimed; len(jobs) != 1 {
		t.Fatalf("claimed %d jobs, want 1", len(jobs))
	}
	again, err := a.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w2", Limit: 10, LeaseTTL: 10 * time.Minute})
	if err != nil || len(again) != 0 {
		t.Fatalf("second claim: %d jobs, %v; want none", len(again), err)
	}
	n, err := a.CountJobs(ctx, core.JobFilter{})
	if err != nil || n[core.StateRunning] != 1 || len(n) != 1 {
		t.Fatalf("counts %v, %v; want one running job", n, err)
	}
}

// TestBusyBeyondBoundFails shows that the retries are bounded: a lock
// held longer than MaxBusyWait fails the call with an error, stores
// nothing, and the next call after the release works.
func TestBusyBeyondBoundFails(t *testing.T) {
	ctx := context.Background()
	a, b := twoBackends(t, sqliteq.Options{BusyTimeout: time.Millisecond, MaxBusyWait: 20 * time.Millisecond})
	tx, err := a.BeginTx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Enqueue(ctx, sqltest.Jobs("q", 1)); err == nil {
		t.Fatal("enqueue under a lock held past the bound: no error")
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if n, err := a.CountJobs(ctx, core.JobFilter{}); err != nil || len(n) != 0 {
		t.Fatalf("counts %v, %v; want none", n, err)
	}
	if _, err := b.Enqueue(ctx, sqltest.Jobs("q", 1)); err != nil {
		t.Fatal(err)
	}
}

func TestPragmas(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		sync sqliteq.Synchronous
		want int
	}{{"", 2}, {sqliteq.SyncFull, 2}, {sqliteq.SyncNormal, 1}} {
		b := newBackend(t, sqliteq.Options{Synchronous: c.sync})
		var got int
		var mode string
		if err := b.DB().QueryRowContext(ctx, "PRAGMA synchronous").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if err := b.DB().QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if got != c.want || mode != "wal" {
			t.Errorf("Synchronous %q: synchronous=%d journal_mode=%s, want %d and wal", c.sync, got, mode, c.want)
		}
	}
	if _, err := sqliteq.Open(ctx, filepath.Join(t.TempDir(), "x.db"), sqliteq.Options{Synchronous: "OFF"}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("Synchronous OFF: %v, want ErrInvalidArgument", err)
	}
	if _, err := sqliteq.Open(ctx, ":memory:", sqliteq.Options{}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf(":memory: %v, want ErrInvalidArgument", err)
	}
}

func TestClosedGivesErrClosed(t *testing.T) {
	b := newBackend(t, sqliteq.Options{})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := b.Enqueue(ctx, sqltest.Jobs("q", 1)); !errors.Is(err, core.ErrClosed) {
		t.Errorf("Enqueue after Close: %v", err)
	}
	if _, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 1, LeaseTTL: time.Second}); !errors.Is(err, core.ErrClosed) {
		t.Errorf("Claim after Close: %v", err)
	}
	if _, err := b.BeginTx(ctx); !errors.Is(err, core.ErrClosed) {
		t.Errorf("BeginTx after Close: %v", err)
	}
	if err := b.Migrate(ctx); !errors.Is(err, core.ErrClosed) {
		t.Errorf("Migrate after Close: %v", err)
	}
}

// TestBusyWaitFollowsLease: with the default options a write that meets
// another process's lock gives up within a quarter of the shortest lease
// asked for (the default wait, five seconds, is longer than a short lease):
// first the claim that asks for the lease, then every later write.
func TestBusyWaitFollowsLease(t *testing.T) {
	ctx := context.Background()
	const lease = 4 * time.Second
	a, b := twoBackends(t, sqliteq.Options{})
	if _, err := b.Enqueue(ctx, sqltest.Jobs("q", 1)); err != nil {
		t.Fatal(err)
	}
	tx, err := a.BeginTx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, c := range []struct {
		name  string
		write func() error
	}{
		{"claim", func() error {
			_, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 1, LeaseTTL: lease})
			return err
		}},
		{"enqueue after the claim", func() error {
			_, err := b.Enqueue(ctx, sqltest.Jobs("q", 1))
			return err
		}},
	} {
		name := c.name
		start := time.Now()
		err := c.write()
		if took := time.Since(start); err == nil || took > lease/2 {
			t.Errorf("%s under a held lock: %v after %v; want an error well within the %v lease", name, err, took, lease)
		}
	}
	if w := b.BusyWait(); w > lease/sqliteq.LeaseBusyFraction {
		t.Errorf("busy wait %v after a %v lease, want at most %v", w, lease, lease/sqliteq.LeaseBusyFraction)
	}
}

// TestBusyWaitRefusesShortLeases: a busy wait set by hand that is not well
// below a lease makes the claim or heartbeat that asks for the lease fail,
// before anything is written; a long enough lease is served.
func TestBusyWaitRefusesShortLeases(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, sqliteq.Options{MaxBusyWait: 5 * time.Second})
	if _, err := b.Enqueue(ctx, sqltest.Jobs("q", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 1, LeaseTTL: 2 * time.Second}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("claim with a 2s lease and a 5s busy wait: %v, want core.ErrInvalidArgument", err)
	}
	jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 1, LeaseTTL: time.Minute})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim with a 1m lease: %d jobs, %v", len(jobs), err)
	}
	if _, err := b.Heartbeat(ctx, jobs[0].Lease, 2*time.Second); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("heartbeat for 2s with a 5s busy wait: %v, want core.ErrInvalidArgument", err)
	}
	if _, err := b.Heartbeat(ctx, jobs[0].Lease, time.Minute); err != nil {
		t.Fatalf("heartbeat for 1m: %v", err)
	}
	if _, err := newBackend(t, sqliteq.Options{BusyTimeout: time.Second}).Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 1, LeaseTTL: 2 * time.Second}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("claim with a 2s lease and a 1s statement wait: %v, want core.ErrInvalidArgument", err)
	}
}
