package natsq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// Three replicas of one namespace, each with workers that claim, complete,
// fail, sleep and retry flow-controlled jobs at the server's time while
// configs change, end with the same state, flow indexes included; a
// replica opened afterwards replays the log to the same state, and every
// replica's indexes are consistent with its jobs.
func TestFlowReplicasAgree(t *testing.T) {
	nc := internalServer(t)
	ctx := context.Background()
	opts := Options{Namespace: "flowagree", CompactEvery: -1, PollInterval: 10 * time.Millisecond}
	var reps []*Backend
	for range 3 {
		b, err := New(ctx, nc, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		reps = append(reps, b)
	}
	if err := reps[0].PutTaskConfig(ctx, core.TaskConfig{Task: "t", MaxRunning: 6, MaxRunningPerKey: 2, MaxStartsPerSecondPerKey: 20, HoldSequenceOnFailure: true}); err != nil {
		t.Fatal(err)
	}
	if err := reps[1].PutQueueConfig(ctx, core.QueueConfig{Queue: "q", MaxRunning: 8}); err != nil {
		t.Fatal(err)
	}
	const perReplica = 150
	for i, b := range reps {
		reqs := make([]core.EnqueueRequest, perReplica)
		for n := range reqs {
			r := core.EnqueueRequest{Queue: "q", Task: "t", MaxAttempts: 2, Priority: n % 2}
			switch n % 4 {
			case 0:
				r.LimitKey = fmt.Sprint("k", n%5)
			case 1:
				r.SequenceKey = fmt.Sprint("s", n%3)
			case 2:
				r.IdempotencyKey, r.Unique = fmt.Sprint("u", i, n%7), core.UniqueWhileActive
			default:
				r.Task = "plain"
			}
			reqs[n] = r
		}
		if _, err := b.Enqueue(ctx, reqs); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i, b := range reps {
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, idle := 0, 0
				for wctx.Err() == nil {
					jobs, err := b.Claim(wctx, core.ClaimRequest{Queue: "q", WorkerID: fmt.Sprintf("w%d-%d", i, w), Limit: 5, LeaseTTL: time.Minute})
					if err != nil {
						if wctx.Err() == nil {
							t.Error(err)
						}
						return
					}
					if len(jobs) == 0 {
						// Held sequences keep jobs queued for good: stop
						// once claims have found nothing for a while.
						if idle++; idle > 60 {
							return
						}
						time.Sleep(5 * time.Millisecond)
						continue
					}
					idle = 0
					for _, j := range jobs {
						n++
						switch {
						case n%11 == 0:
							_, err = b.Fail(wctx, core.Failure{Lease: j.Lease, Error: "boom", Terminal: true})
							if err == nil && n%2 == 0 {
								if _, rerr := b.Retry(wctx, j.ID); rerr != nil && !errors.Is(rerr, core.ErrIdempotencyConflict) {
									err = rerr
								}
							}
						case n%7 == 0:
							_, err = b.Fail(wctx, core.Failure{Lease: j.Lease, Error: "again"})
						case n%5 == 0 && j.Attempt == 1:
							err = b.Sleep(wctx, j.Lease, time.Time{})
						default:
							_, err = b.Complete(wctx, []core.Completion{{Lease: j.Lease}})
						}
						if err != nil && wctx.Err() == nil {
							t.Error(err)
							return
						}
					}
					if n%40 == 0 {
						cfg := core.TaskConfig{Task: "t", MaxRunning: 4 + n%5, MaxRunningPerKey: 1 + n%2, HoldSequenceOnFailure: n%3 != 0}
						if err := b.PutTaskConfig(wctx, cfg); err != nil && wctx.Err() == nil {
							t.Error(err)
						}
					}
				}
			}()
		}
	}
	wg.Wait()
	late, err := New(ctx, nc, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	reps = append(reps, late)
	var want string
	for i, b := range reps {
		if err := b.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		b.mu.RLock()
		got := digest(b.st)
		ierr := checkFlowIndexes(b.st)
		b.mu.RUnlock()
		if ierr != nil {
			t.Fatalf("replica %d: %v", i, ierr)
		}
		if i == 0 {
			want = got
			continue
		}
		if got != want {
			t.Fatalf("replica %d differs:\n%s", i, lineDiff(got, want))
		}
	}
	counts, _ := reps[0].CountJobs(ctx, core.JobFilter{Queue: "q"})
	if counts[core.StateSucceeded] == 0 {
		t.Fatalf("no job succeeded: %v", counts)
	}
	t.Logf("final counts %v", counts)
}
