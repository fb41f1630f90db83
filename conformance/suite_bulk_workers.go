package conformance

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
)

// The bulk cases that run beside workers, and the atomicity of a step.

// bulkWorkers is a pool of workers that claim a queue's jobs and complete
// each at once, and what they saw.
type bulkWorkers struct {
	e    *env
	wg   sync.WaitGroup
	stop chan struct{}
	errs chan error

	// hold is how long a worker holds a claim before it completes the
	// jobs, as a handler would take.
	hold time.Duration

	mu        sync.Mutex
	completed int // completes that held
	lost      int // completes refused because the job had left the claim
}

// startWorkers starts n workers on queue, each claiming up to limit jobs
// at a time and holding them for hold, and returns once each has made its
// first claim.
func (e *env) startWorkers(queue string, n, limit int, hold time.Duration) *bulkWorkers {
	w := &bulkWorkers{e: e, hold: hold, stop: make(chan struct{}), errs: make(chan error, n)}
	var started sync.WaitGroup
	for i := range n {
		w.wg.Add(1)
		started.Add(1)
		go func() {
			defer w.wg.Done()
			for first := true; ; first = false {
				jobs, err := e.b.Claim(e.ctx, core.ClaimRequest{Queue: queue, WorkerID: fmt.Sprint("w", i), Limit: limit, LeaseTTL: time.Hour})
				if first {
					started.Done()
				}
				if err != nil {
					w.errs <- err
					return
				}
				if len(jobs) > 0 && w.hold > 0 {
					time.Sleep(w.hold)
				}
				for _, j := range jobs {
					if err := w.complete(j); err != nil {
						w.errs <- err
						return
					}
				}
				select {
				case <-w.stop:
					return
				default:
				}
			}
		}()
	}
	started.Wait()
	return w
}

// complete completes j and counts the outcome: a complete that held, or
// one refused because the job was cancelled or deleted meanwhile.
func (w *bulkWorkers) complete(j core.Job) error {
	ierrs, err := w.e.b.Complete(w.e.ctx, []core.Completion{{Lease: j.Lease}})
	if err == nil {
		err = ierrs[0]
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err == nil:
		w.completed++
	case errors.Is(err, core.ErrLeaseLost) || errors.Is(err, core.ErrNotFound):
		w.lost++
	default:
		return fmt.Errorf("complete %s: %w", j.ID, err)
	}
	return nil
}

// halt stops the workers, waits for them and fails the test on any error
// they met.
func (w *bulkWorkers) halt() {
	close(w.stop)
	w.wg.Wait()
	close(w.errs)
	for err := range w.errs {
		w.e.t.Fatalf("worker: %v", err)
	}
}

// waitCount waits until the counts of f satisfy ok, or fails once they
// have not changed for signalWait: a wait on the workers, not a sleep, that
// a slow but moving store passes and a stuck one fails. It reads the counts
// every 10 ms, so that the reads do not crowd out the workers they wait on.
func (e *env) waitCount(f core.JobFilter, ok func(map[core.JobState]int64) bool, what string) {
	e.t.Helper()
	deadline := time.Now().Add(signalWait)
	var last map[core.JobState]int64
	for {
		m := e.count(f)
		if ok(m) {
			return
		}
		if !maps.Equal(m, last) {
			last, deadline = m, time.Now().Add(signalWait)
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("counts %v unchanged for %v, want %s", m, signalWait, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// bulkCancelWhileWorkers cancels every job of a queue in steps while
// workers claim and complete them: each job ends either succeeded by a
// worker whose Complete held or cancelled by the bulk action, and the
// counts of both sides agree with the store exactly.
func bulkCancelWhileWorkers(e *env) {
	const n = 400
	e.enqueueN("q", "t", n)
	w := e.startWorkers("q", 3, 10, 0)
	tot := e.bulkAll(core.BulkRequest{Action: core.BulkCancel, Limit: 25, Search: core.JobSearch{JobFilter: core.JobFilter{Queue: "q"}}})
	w.halt()
	m := e.count(core.JobFilter{Queue: "q"})
	if m[core.StateCancelled]+m[core.StateSucceeded] != n {
		e.t.Fatalf("after the bulk cancel: %v, want every job succeeded or cancelled", m)
	}
	requireEq(e.t, int64(tot.Changed), m[core.StateCancelled], "jobs the bulk cancel changed against cancelled jobs")
	requireEq(e.t, int64(w.completed), m[core.StateSucceeded], "completes that held against succeeded jobs")
	requireEq(e.t, tot.Failed, 0, "failed bulk items")
	if w.lost > tot.Changed {
		e.t.Fatalf("%d completes lost their lease but only %d jobs were cancelled", w.lost, tot.Changed)
	}
}

// bulkRetryWhileWorkers retries a queue's failed jobs in steps while
// workers claim and complete what each step queues again: every job is
// retried once and ends succeeded by one complete that held.
func bulkRetryWhileWorkers(e *env) {
	const n = 400
	e.enqueueN("q", "t", n)
	for left := n; left > 0; {
		jobs := e.claim("q", min(left, 100))
		for _, j := range jobs {
			e.fail(core.Failure{Lease: j.Lease, Error: "x", Terminal: true})
		}
		left -= len(jobs)
	}
	w := e.startWorkers("q", 3, 10, 0)
	tot := e.bulkAll(core.BulkRequest{Action: core.BulkRetry, Limit: 25, Search: core.JobSearch{JobFilter: core.JobFilter{Queue: "q"}}})
	e.waitCount(core.JobFilter{Queue: "q"}, func(m map[core.JobState]int64) bool { return m[core.StateSucceeded] == n },
		fmt.Sprintf("all %d retried jobs succeeded", n))
	w.halt()
	if tot.Changed != n || tot.Matched != n {
		e.t.Fatalf("bulk retry while workers run = %+v, want all %d jobs changed", tot, n)
	}
	requireEq(e.t, w.completed, n, "completes that held")
	requireEq(e.t, w.lost, 0, "completes refused")
}

// bulkDeleteWhileWorkers deletes a queue's jobs in steps of 10 while four
// workers claim five jobs at a time, hold each claim for half a
// millisecond, as handlers do, and complete the jobs: with steps that
// small, claims land between a step's search and its change even on a
// store whose steps take well under a millisecond, and the jobs they take
// are still running when the step changes them. Without force, a job
// running when a step reaches it is left alone: one its search saw
// running is not visited, one a worker claimed after the search is
// skipped. So no complete is refused, and the jobs left are the ones not
// deleted, all succeeded. The rounds repeat the race until a step has
// skipped a job (or 16 have run). With force, one round deletes every
// job, running or not.
func bulkDeleteWhileWorkers(e *env, force bool) {
	const n, rounds = 300, 16
	skipped := 0
	for round := range rounds {
		queue := fmt.Sprint("q", round)
		e.enqueueN(queue, "t", n)
		w := e.startWorkers(queue, 4, 5, 500*time.Microsecond)
		tot := e.bulkAll(core.BulkRequest{Action: core.BulkDelete, Force: force, Limit: 10, Search: core.JobSearch{JobFilter: core.JobFilter{Queue: queue}}})
		w.halt()
		m := e.count(core.JobFilter{Queue: queue})
		left := total(m)
		requireEq(e.t, tot.Failed, 0, "failed bulk items")
		if force {
			if left != 0 || tot.Changed != n {
				e.t.Fatalf("forced bulk delete = %+v, leaving %v; want all %d jobs deleted", tot, m, n)
			}
			return
		}
		if w.lost != 0 {
			e.t.Fatalf("round %d: %d completes were refused: the bulk delete deleted running jobs (%+v)", round, w.lost, tot)
		}
		if m[core.StateSucceeded] != left || int64(tot.Changed)+left != n {
			e.t.Fatalf("round %d: bulk delete = %+v, leaving %v; want %d jobs left, succeeded", round, tot, m, n-tot.Changed)
		}
		if skipped += tot.Skipped; skipped > 0 {
			return // a step met a job its search saw before a worker claimed it
		}
	}
}

// bulkAtomicStep runs a cancel, a retry and a delete over a queue in two
// steps each while a reader counts the queue's jobs without pause: every
// count the reader sees is the store before or after a step, never a
// step half applied.
func bulkAtomicStep(e *env) {
	if _, ok := e.b.(core.BulkActor); !ok {
		e.t.Fatalf("the harness declares AtomicBulk but %T does not implement core.BulkActor", e.b)
	}
	const step = core.MaxPageSize
	const n = 2 * step
	e.enqueueN("q", "t", n)
	f := core.JobSearch{JobFilter: core.JobFilter{Queue: "q"}}
	for _, a := range []struct {
		action core.BulkAction
		moved  func(m map[core.JobState]int64) int64
	}{
		{core.BulkCancel, func(m map[core.JobState]int64) int64 { return m[core.StateCancelled] }},
		{core.BulkRetry, func(m map[core.JobState]int64) int64 { return m[core.StateQueued] }},
		{core.BulkDelete, func(m map[core.JobState]int64) int64 { return n - total(m) }},
	} {
		stop := make(chan struct{})
		seen := make(chan []int64, 1)
		errc := make(chan error, 1)
		go func() {
			var out []int64
			defer func() { seen <- out }()
			for {
				m, err := e.b.(core.JobSearcher).CountSearch(e.ctx, f)
				if err != nil {
					errc <- err
					return
				}
				out = append(out, a.moved(m))
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
		tot := e.bulkAll(core.BulkRequest{Action: a.action, Limit: step, Search: f})
		close(stop)
		counts := <-seen
		select {
		case err := <-errc:
			e.t.Fatalf("CountSearch during the bulk %s: %v", a.action, err)
		default:
		}
		if tot.Changed != n {
			e.t.Fatalf("bulk %s = %+v, want all %d jobs changed", a.action, tot, n)
		}
		for _, c := range counts {
			if c%step != 0 {
				e.t.Fatalf("during the bulk %s in steps of %d a reader counted %d jobs changed: a step was seen half applied", a.action, step, c)
			}
		}
	}
}

// total sums counts by state.
func total(m map[core.JobState]int64) int64 {
	var n int64
	for _, c := range m {
		n += c
	}
	return n
}
