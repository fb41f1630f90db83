package conformance

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// Exclusivity sizes: at least 8 claimers over at least 2,000 jobs.
const (
	exclusiveJobs     = 2000
	exclusiveClaimers = 12
)

// testExclusivity: concurrent claimers never share a job and lose none.
func testExclusivity(t *testing.T, h Harness) {
	cases(t, h, map[string]func(e *env){
		"ConcurrentClaimers": exclusiveClaimers8,
		"ConcurrentRescue":   exclusiveRescue,
		"CompleteVsCancel":   exclusiveCompleteVsCancel,
	})
}

func exclusiveClaimers8(e *env) {
	jobs := e.enqueueN("q", "t", exclusiveJobs)
	want := map[string]bool{}
	for _, j := range jobs {
		want[j.ID] = true
	}

	var mu sync.Mutex
	claimedBy := map[string]string{}
	var leases []core.Lease
	var dups []string
	var wg sync.WaitGroup
	errc := make(chan error, exclusiveClaimers)
	for w := range exclusiveClaimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := fmt.Sprintf("w%d", w)
			limit := 1 + w%7
			for {
				got, err := e.b.Claim(e.ctx, core.ClaimRequest{Queue: "q", WorkerID: worker, Limit: limit, LeaseTTL: time.Hour})
				if err != nil {
					errc <- fmt.Errorf("%s: Claim: %w", worker, err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, j := range got {
					if prev, ok := claimedBy[j.ID]; ok {
						dups = append(dups, fmt.Sprintf("%s (by %s and %s)", j.ID, prev, worker))
						continue
					}
					claimedBy[j.ID] = worker
					leases = append(leases, j.Lease)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		e.t.Fatal(err)
	}
	if len(dups) > 0 {
		e.t.Fatalf("%d jobs were handed to two claims, first %s", len(dups), dups[0])
	}
	if len(claimedBy) != exclusiveJobs {
		e.t.Fatalf("%d distinct jobs claimed, want %d", len(claimedBy), exclusiveJobs)
	}
	for id := range claimedBy {
		if !want[id] {
			e.t.Fatalf("claimed unknown job %s", id)
		}
	}
	requireEq(e.t, e.count(core.JobFilter{Queue: "q"})[core.StateRunning], exclusiveJobs, "running jobs")

	for i := 0; i < len(leases); i += 250 {
		batch := leases[i:min(i+250, len(leases))]
		items := make([]core.Completion, len(batch))
		for k, l := range batch {
			if l.Token != 1 {
				e.t.Fatalf("job %s claimed once has token %d", l.JobID, l.Token)
			}
			items[k] = core.Completion{Lease: l}
		}
		errs, err := e.b.Complete(e.ctx, items)
		if err != nil {
			e.t.Fatalf("Complete: %v", err)
		}
		for k, err := range errs {
			if err != nil {
				e.t.Fatalf("Complete(%s): %v", batch[k].JobID, err)
			}
		}
	}
	got := e.count(core.JobFilter{Queue: "q"})
	if len(got) != 1 || got[core.StateSucceeded] != exclusiveJobs {
		e.t.Fatalf("counts after completing all: %v, want %d succeeded", got, exclusiveJobs)
	}
}

func exclusiveRescue(e *env) {
	const n = 200
	e.enqueueN("q", "t", n)
	requireEq(e.t, len(e.claimAs("q", "w", n, time.Second)), n, "claimed")
	e.advance(time.Second)
	var mu sync.Mutex
	var total core.RescueResult
	var wg sync.WaitGroup
	var firstErr error
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r, err := e.b.Rescue(e.ctx, core.RescueRequest{Limit: 7})
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				total.Requeued += r.Requeued
				total.Failed += r.Failed
				total.Cancelled += r.Cancelled
				mu.Unlock()
				if err != nil || r.Total() == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		e.t.Fatalf("Rescue: %v", firstErr)
	}
	if total != (core.RescueResult{Requeued: n}) {
		e.t.Fatalf("concurrent rescues reported %+v, want %d requeued in all", total, n)
	}
	requireEq(e.t, e.count(core.JobFilter{})[core.StateQueued], n, "queued after rescue")
	for _, j := range e.claim("q", n) {
		requireEq(e.t, j.Attempt, 2, "attempt after one rescue")
		requireEq(e.t, j.Lease.Token, int64(2), "token after one rescue")
	}
}

func exclusiveCompleteVsCancel(e *env) {
	const n = 100
	e.enqueueN("q", "t", n)
	jobs := e.claim("q", n)
	var wg sync.WaitGroup
	completed := make([]bool, n)
	cancelled := make([]bool, n)
	errc := make(chan error, 2*n)
	for i, j := range jobs {
		wg.Add(2)
		go func() {
			defer wg.Done()
			errs, err := e.b.Complete(e.ctx, []core.Completion{{Lease: j.Lease}})
			switch {
			case err != nil:
				errc <- err
			case errs[0] == nil:
				completed[i] = true
			case !errors.Is(errs[0], core.ErrLeaseLost):
				errc <- errs[0]
			}
		}()
		go func() {
			defer wg.Done()
			_, err := e.b.Cancel(e.ctx, j.ID, "race")
			switch {
			case err == nil:
				cancelled[i] = true
			case !errors.Is(err, core.ErrInvalidState):
				errc <- err
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		e.t.Fatalf("unexpected error in the race: %v", err)
	}
	for i, j := range jobs {
		if completed[i] == cancelled[i] {
			e.t.Fatalf("job %s: complete won %v, cancel won %v; exactly one must win", j.ID, completed[i], cancelled[i])
		}
		want := core.StateSucceeded
		if cancelled[i] {
			want = core.StateCancelled
		}
		e.requireState(j.ID, want)
	}
}
