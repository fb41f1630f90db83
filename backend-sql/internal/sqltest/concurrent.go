package sqltest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/boson-go/boson/core"
)

// ConcurrentIdempotency has 16 goroutines, alternating between two
// backends on one store (as two processes would be), enqueue the same
// key at once: exactly one job is stored, and every call returns it.
func ConcurrentIdempotency(t *testing.T, a, b core.QueueBackend) {
	ctx := context.Background()
	const n = 16
	ids := make([]string, n)
	reused := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		be := a
		if i%2 == 1 {
			be = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := be.Enqueue(ctx, []core.EnqueueRequest{{Queue: "q", Task: "t", Payload: []byte("same"), IdempotencyKey: "k"}})
			if err == nil {
				ids[i], reused[i] = res[0].Job.ID, res[0].Reused
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	fresh := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("enqueue %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("enqueue %d returned job %s, enqueue 0 job %s", i, ids[i], ids[0])
		}
		if !reused[i] {
			fresh++
		}
	}
	if fresh != 1 {
		t.Fatalf("%d calls report a new job, want 1", fresh)
	}
	counts, err := a.CountJobs(ctx, core.JobFilter{})
	if err != nil || counts[core.StateQueued] != 1 {
		t.Fatalf("counts %v, %v; want one queued job", counts, err)
	}
}

// ConcurrentMaxInFlight has 20 goroutines on two backends enqueue one job
// each of a task limited to 5 in flight: exactly 5 succeed.
func ConcurrentMaxInFlight(t *testing.T, a, b core.QueueBackend) {
	ctx := context.Background()
	if err := a.PutTaskConfig(ctx, core.TaskConfig{Task: "limited", MaxInFlight: 5}); err != nil {
		t.Fatal(err)
	}
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		be := a
		if i%2 == 1 {
			be = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = be.Enqueue(ctx, []core.EnqueueRequest{{Queue: "q", Task: "limited"}})
		}()
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, core.ErrRateLimited):
			t.Fatalf("enqueue %d: %v", i, err)
		}
	}
	counts, err := a.CountJobs(ctx, core.JobFilter{Task: "limited"})
	if err != nil {
		t.Fatal(err)
	}
	if ok != 5 || counts[core.StateQueued] != 5 {
		t.Fatalf("%d enqueues succeeded and %d jobs are queued; want 5 and 5", ok, counts[core.StateQueued])
	}
}

// RefusedTxEnqueue checks that a refused EnqueueTx leaves the caller's
// transaction usable: the caller's own write still commits, and no job
// of the refused batch is stored. begin opens the caller's transaction
// and returns it with its own write (exec) and its commit.
func RefusedTxEnqueue(t *testing.T, b core.QueueBackend, begin func() (tx any, exec, commit func() error)) {
	ctx := context.Background()
	if _, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "q", Task: "t", Payload: []byte("a"), IdempotencyKey: "k"}}); err != nil {
		t.Fatal(err)
	}
	tx, exec, commit := begin()
	if err := exec(); err != nil {
		t.Fatal(err)
	}
	_, err := core.EnqueueTx(ctx, b, tx, []core.EnqueueRequest{
		{Queue: "q", Task: "t", Payload: []byte("fresh")},
		{Queue: "q", Task: "t", Payload: []byte("b"), IdempotencyKey: "k"},
	})
	if !errors.Is(err, core.ErrIdempotencyConflict) {
		t.Fatalf("EnqueueTx of a conflicting key: %v, want ErrIdempotencyConflict", err)
	}
	if err := commit(); err != nil {
		t.Fatalf("commit after a refused EnqueueTx: %v", err)
	}
	counts, err := b.CountJobs(ctx, core.JobFilter{})
	if err != nil || counts[core.StateQueued] != 1 {
		t.Fatalf("counts %v, %v; want only the first job", counts, err)
	}
}
