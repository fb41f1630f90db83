package sqltest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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

// BulkBesideCompletions runs bulk cancels, retries and deletes (through
// core.Bulk, in steps of 100) over a queue's jobs while a worker
// completes the same jobs in batches of 100 whose ids run high to low,
// the reverse of a bulk step's order, on a and b (two backends of one
// store, or one backend twice): no call fails (a store that locked the
// rows of the two in different orders would abort one of them as a
// deadlock), and the bulk's counts and the completions' outcomes add up
// to the store's counts exactly.
func BulkBesideCompletions(t *testing.T, a, b core.QueueBackend) {
	for _, tc := range []struct {
		action core.BulkAction
		force  bool
	}{{core.BulkCancel, false}, {core.BulkRetry, false}, {core.BulkDelete, false}, {core.BulkDelete, true}} {
		name := string(tc.action)
		if tc.force {
			name += "-force"
		}
		t.Run(name, func(t *testing.T) { bulkBesideCompletions(t, a, b, "bc-"+name, tc.action, tc.force) })
	}
}

func bulkBesideCompletions(t *testing.T, a, b core.QueueBackend, queue string, action core.BulkAction, force bool) {
	ctx := context.Background()
	const total, failed, batch = 1200, 200, 100
	reqs := make([]core.EnqueueRequest, total)
	for i := range reqs {
		reqs[i] = core.EnqueueRequest{Queue: queue, Task: "t", MaxAttempts: 1}
	}
	if _, err := a.Enqueue(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	var leases []core.Lease
	for len(leases) < total {
		jobs, err := a.Claim(ctx, core.ClaimRequest{Queue: queue, WorkerID: "w", Limit: total - len(leases), LeaseTTL: time.Hour})
		if err != nil || len(jobs) == 0 {
			t.Fatalf("claim: %d jobs, %v", len(jobs), err)
		}
		for _, j := range jobs {
			leases = append(leases, j.Lease)
		}
	}
	// Some jobs fail for good first, so that a retry has work; the rest
	// are completed in shuffled batches, each sorted high to low.
	rand.Shuffle(len(leases), func(i, j int) { leases[i], leases[j] = leases[j], leases[i] })
	for _, l := range leases[:failed] {
		if _, err := a.Fail(ctx, core.Failure{Lease: l, Error: "boom"}); err != nil {
			t.Fatal(err)
		}
	}
	running := leases[failed:]
	var completed, lost int64
	var wg sync.WaitGroup
	var completeErr, bulkErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		for start := 0; start < len(running); start += batch {
			part := slices.Clone(running[start:min(start+batch, len(running))])
			slices.SortFunc(part, func(x, y core.Lease) int { return strings.Compare(y.JobID, x.JobID) })
			items := make([]core.Completion, len(part))
			for i, l := range part {
				items[i] = core.Completion{Lease: l}
			}
			errs, err := b.Complete(ctx, items)
			if err != nil {
				completeErr = fmt.Errorf("complete batch at %d: %w", start, err)
				return
			}
			for i, err := range errs {
				switch {
				case err == nil:
					completed++
				case errors.Is(err, core.ErrLeaseLost):
					lost++
				default:
					completeErr = fmt.Errorf("complete job %s: %w", part[i].JobID, err)
					return
				}
			}
		}
	}()
	var sum core.BulkResult
	go func() {
		defer wg.Done()
		req := core.BulkRequest{Action: action, Force: force, Limit: batch,
			Search: core.JobSearch{JobFilter: core.JobFilter{Queue: queue}}}
		for {
			res, err := core.Bulk(ctx, a, req)
			sum.Matched += res.Matched
			sum.Changed += res.Changed
			sum.Skipped += res.Skipped
			sum.Failed += res.Failed
			if err != nil {
				bulkErr = fmt.Errorf("bulk %s step after %q: %w", action, req.Cursor, err)
				return
			}
			if res.Done {
				return
			}
			req.Cursor = res.Next
		}
	}()
	wg.Wait()
	if completeErr != nil || bulkErr != nil {
		t.Fatalf("completions: %v; bulk: %v", completeErr, bulkErr)
	}
	counts, err := a.CountJobs(ctx, core.JobFilter{Queue: queue})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed != 0 || int64(sum.Changed+sum.Skipped+sum.Failed) != sum.Matched {
		t.Fatalf("bulk %s: %+v", action, sum)
	}
	if completed+lost != int64(len(running)) {
		t.Fatalf("%d completed and %d lost of %d running jobs", completed, lost, len(running))
	}
	stored := sum0(counts)
	var want map[core.JobState]int64
	switch {
	case action == core.BulkCancel:
		// Each running job was cancelled, or completed first.
		want = map[core.JobState]int64{core.StateSucceeded: completed, core.StateFailed: failed, core.StateCancelled: lost}
		if int64(sum.Changed) != lost {
			t.Fatalf("bulk cancel %+v beside %d completions lost to it", sum, lost)
		}
	case action == core.BulkRetry:
		want = map[core.JobState]int64{core.StateSucceeded: completed, core.StateQueued: failed}
		if sum.Changed != failed || lost != 0 {
			t.Fatalf("bulk retry %+v, %d completions lost", sum, lost)
		}
	case force:
		want = map[core.JobState]int64{}
		if sum.Changed != total || stored != 0 {
			t.Fatalf("bulk delete (force) %+v, %d jobs left", sum, stored)
		}
	default:
		// Finished jobs were deleted; the jobs still running when their
		// step came are left, succeeded since.
		want = map[core.JobState]int64{core.StateSucceeded: total - int64(sum.Changed)}
		if lost != 0 || sum.Changed < failed {
			t.Fatalf("bulk delete %+v, %d completions lost", sum, lost)
		}
	}
	if !maps.Equal(nonZero(counts), nonZero(want)) {
		t.Fatalf("store counts %v, want %v (bulk %+v, %d completed, %d lost)", counts, want, sum, completed, lost)
	}
}

func sum0(m map[core.JobState]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
