package sqltest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// TxCancelRacesWorker checks that a worker racing a transactional cancel
// of its job sees the transaction's outcome: a heartbeat started while
// the transaction is open waits for it (the job's row lock or the write
// lock) and then fails with core.ErrLeaseLost after a commit, or extends
// the lease after a rollback. Whatever the interleaving, a heartbeat
// never extends a lease that the committed cancel superseded. begin
// opens the caller's transaction and returns it with its commit and
// rollback.
func TxCancelRacesWorker(t *testing.T, b core.QueueBackend, begin func() (tx any, commit, rollback func() error)) {
	ctx := context.Background()
	for _, commit := range []bool{true, false} {
		if _, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "race", Task: "t"}}); err != nil {
			t.Fatal(err)
		}
		jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "race", WorkerID: "w", Limit: 1, LeaseTTL: time.Minute})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim: %v, %v", jobs, err)
		}
		j := jobs[0]
		tx, cm, rb := begin()
		if _, err := core.CancelTx(ctx, b, tx, j.ID, "raced"); err != nil {
			t.Fatalf("CancelTx: %v", err)
		}
		hb := make(chan error, 1)
		go func() {
			_, err := b.Heartbeat(ctx, j.Lease, time.Hour)
			hb <- err
		}()
		end, want, state := rb, error(nil), core.StateRunning
		if commit {
			end, want, state = cm, core.ErrLeaseLost, core.StateCancelled
		}
		if err := end(); err != nil {
			t.Fatalf("ending the transaction (commit %v): %v", commit, err)
		}
		if err := <-hb; !errors.Is(err, want) {
			t.Fatalf("heartbeat racing a cancel (commit %v): %v, want %v", commit, err, want)
		}
		got, err := b.GetJob(ctx, j.ID)
		if err != nil || got.State != state {
			t.Fatalf("job after the transaction (commit %v): %s, %v; want %s", commit, got.State, err, state)
		}
		if !commit {
			if _, err := b.Cancel(ctx, j.ID, "tidy"); err != nil {
				t.Fatal(err)
			}
		}
	}
}
