package conformance

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// Exactness sizes: 8 concurrent claimers over 2,000 jobs of each limit.
const (
	exactJobs     = 2000 // unless the harness sets FlowExactJobs
	exactClaimers = 8
	exactTTL      = 24 * time.Hour
	// exactStall is how many empty claims in a row, with no job held by
	// any claimer, no claim in flight and no completion for exactQuiet,
	// end a race that cannot finish (jobs lost or stuck). The wall-clock
	// bound keeps a store whose empty claims are answered locally (and so
	// fast) from tripping it while one slow claim is on its way.
	exactStall = 20_000
	exactQuiet = 10 * time.Second
	// exactSamplePause separates the free-running sampler's reads of the
	// store's counts.
	exactSamplePause = time.Millisecond
)

// testFlowExact: with 8 claimers racing over 2,000 jobs, a limit is never
// exceeded at any instant. Two witnesses check it: the store's own counts
// (CountJobs, RunningByKey, CountSearch), sampled while the claimers run,
// and the claimers' record — each claimer adds a job to its counters after
// Claim returns and takes it off before it calls Complete, so the record
// never exceeds the store's true count.
func testFlowExact(t *testing.T, h Harness) {
	cases(t, h, flowCases(h, map[string]func(e *env){
		"TaskLimit":     exactTaskLimit,
		"QueueLimit":    exactQueueLimit,
		"KeyLimit":      exactKeyLimit,
		"Sequence":      exactSequence,
		"TaskStartRate": exactTaskRate,
		"KeyStartRate":  exactKeyRate,
	}))
}

// exactRun describes one race.
type exactRun struct {
	queue string
	// bound is the most jobs any counter may hold at once.
	bound int64
	// counters names the counters job j belongs to ("" or none: none).
	counters func(j core.Job) []string
	// sample reads the store's counts and reports a limit exceeded.
	sample func() error
	// claimed checks one claimed job (sequence order, start windows).
	claimed func(j core.Job) error
	// idle runs when a claim finds nothing; it may move the clock.
	idle func()
}

// race runs the claimers until all total jobs of e's queue completed.
func (e *env) race(r exactRun, total int) {
	e.t.Helper()
	counts := map[string]*atomic.Int64{}
	var countsMu sync.Mutex
	counter := func(name string) *atomic.Int64 {
		countsMu.Lock()
		defer countsMu.Unlock()
		c, ok := counts[name]
		if !ok {
			c = new(atomic.Int64)
			counts[name] = c
		}
		return c
	}
	var (
		completed atomic.Int64
		inFlight  atomic.Int64 // jobs claimers hold
		claiming  atomic.Int64 // Claim calls under way, until their jobs count in inFlight
		empty     atomic.Int64 // empty claims since the last completion
		progress  atomic.Int64 // when the last completion was, in Unix nanoseconds
		samples   atomic.Int64
		peak      atomic.Int64
		done      atomic.Bool
		errMu     sync.Mutex
		firstErr  error
	)
	fail := func(err error) {
		errMu.Lock()
		defer errMu.Unlock()
		if firstErr == nil {
			firstErr = err
		}
		done.Store(true)
	}
	sample := func() {
		if r.sample == nil {
			return
		}
		if err := r.sample(); err != nil {
			fail(fmt.Errorf("the store's counts: %w", err))
		}
		samples.Add(1)
	}
	progress.Store(time.Now().UnixNano())
	stalled := func() bool {
		return empty.Add(1) > exactStall && inFlight.Load() == 0 && claiming.Load() == 0 &&
			time.Since(time.Unix(0, progress.Load())) > exactQuiet
	}
	var wg, sampler sync.WaitGroup
	sampler.Add(1)
	go func() { // the sampler, until the claimers are done
		defer sampler.Done()
		for !done.Load() {
			sample()
			// A pause between samples, so that the reads take less of
			// the store's time from the claims and completions they
			// watch. The first claimer samples as well, while it holds
			// its jobs.
			time.Sleep(exactSamplePause)
		}
	}()
	for w := range exactClaimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := fmt.Sprintf("w%d", w)
			limit := 1 + w%4
			for !done.Load() && completed.Load() < int64(total) {
				claiming.Add(1)
				jobs, err := e.b.Claim(e.ctx, core.ClaimRequest{Queue: r.queue, WorkerID: worker, Limit: limit, LeaseTTL: exactTTL})
				inFlight.Add(int64(len(jobs)))
				claiming.Add(-1)
				if err != nil {
					fail(fmt.Errorf("%s: Claim: %w", worker, err))
					return
				}
				if len(jobs) == 0 {
					if stalled() {
						fail(fmt.Errorf("%s: no progress in %d empty claims with no job held by a claimer; %d of %d jobs completed, the store counts %v",
							worker, exactStall, completed.Load(), total, e.countsOrErr(r.queue)))
						return
					}
					if r.idle != nil {
						r.idle()
					}
					// Back off a little, as a worker's poll does: on a
					// store with one writer, claimers that spin on empty
					// claims would starve the completions that free room.
					time.Sleep(time.Millisecond)
					continue
				}
				var held []*atomic.Int64
				for _, j := range jobs {
					if r.claimed != nil {
						if err := r.claimed(j); err != nil {
							fail(err)
						}
					}
					for _, name := range r.counters(j) {
						c := counter(name)
						n := c.Add(1)
						if n > peak.Load() {
							peak.Store(n)
						}
						if n > r.bound {
							fail(fmt.Errorf("%s: %d jobs of %s were running at once (claimed %s), the limit is %d", worker, n, name, j.ID, r.bound))
						}
						held = append(held, c)
					}
				}
				if w == 0 {
					sample() // while this claimer holds its jobs
				}
				runtime.Gosched()
				for _, c := range held {
					c.Add(-1)
				}
				items := make([]core.Completion, len(jobs))
				for i, j := range jobs {
					items[i] = core.Completion{Lease: j.Lease}
				}
				errs, err := e.b.Complete(e.ctx, items)
				if err == nil {
					err = errors.Join(errs...)
				}
				if err != nil {
					fail(fmt.Errorf("%s: Complete: %w", worker, err))
					return
				}
				empty.Store(0)
				progress.Store(time.Now().UnixNano())
				completed.Add(int64(len(jobs)))
				inFlight.Add(-int64(len(jobs)))
			}
		}()
	}
	wg.Wait()
	done.Store(true)
	sampler.Wait()
	if firstErr != nil {
		e.t.Fatal(firstErr)
	}
	if r.sample != nil && samples.Load() == 0 {
		e.t.Fatal("the store's counts were never sampled during the race")
	}
	requireEq(e.t, completed.Load(), int64(total), "jobs completed")
	got := e.count(core.JobFilter{Queue: r.queue})
	if len(got) != 1 || got[core.StateSucceeded] != int64(total) {
		e.t.Fatalf("counts after the race: %v, want %d succeeded", got, total)
	}
	e.t.Logf("%d claimers, %d jobs: peak record %d (limit %d), %d samples of the store's counts", exactClaimers, total, peak.Load(), r.bound, samples.Load())
}

// countsOrErr is CountJobs of queue for a failure message.
func (e *env) countsOrErr(queue string) any {
	m, err := e.b.CountJobs(e.ctx, core.JobFilter{Queue: queue})
	if err != nil {
		return err
	}
	return nonZero(m)
}

// atMost reports running counts above bound.
func atMost(what string, n, bound int64) error {
	if n > bound {
		return fmt.Errorf("%s: %d running, the limit is %d", what, n, bound)
	}
	return nil
}

// countRunning is CountJobs(f)'s running count, for the sampler.
func (e *env) countRunning(f core.JobFilter) (int64, error) {
	m, err := e.b.CountJobs(e.ctx, f)
	return m[core.StateRunning], err
}

// keysAtMost checks RunningByKey(task) against bound.
func (e *env) keysAtMost(task string, bound int64) error {
	fc, ok := e.b.(core.FlowController)
	if !ok {
		return fmt.Errorf("%T does not implement core.FlowController", e.b)
	}
	kcs, err := fc.RunningByKey(e.ctx, task, core.MaxPageSize)
	if err != nil {
		return err
	}
	for i, kc := range kcs {
		if err := atMost("RunningByKey key "+kc.Key, kc.Running, bound); err != nil {
			return err
		}
		if i > 0 && (kcs[i-1].Running < kc.Running || kcs[i-1].Running == kc.Running && kcs[i-1].Key >= kc.Key) {
			return fmt.Errorf("RunningByKey misordered: %v", kcs)
		}
	}
	return nil
}

func exactTaskLimit(e *env) {
	const bound = 3
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxRunning: bound})
	e.enqueueN("q", "t", e.exactJobs())
	e.enqueueN("q", "u", e.exactJobs()/10) // another task, not limited, passed to while t is saturated
	e.race(exactRun{
		queue: "q", bound: bound,
		counters: func(j core.Job) []string {
			if j.Task == "t" {
				return []string{"task t"}
			}
			return nil
		},
		sample: func() error {
			n, err := e.countRunning(core.JobFilter{Task: "t"})
			if err != nil {
				return err
			}
			return atMost("CountJobs(task t)", n, bound)
		},
	}, e.exactJobs()+e.exactJobs()/10)
}

func exactQueueLimit(e *env) {
	const bound = 3
	e.putQueueConfig(core.QueueConfig{Queue: "q", MaxRunning: bound})
	reqs := make([]core.EnqueueRequest, 0, e.exactJobs())
	for i := range e.exactJobs() {
		reqs = append(reqs, req("q", []string{"t", "u", "v"}[i%3]))
	}
	for i := 0; i < len(reqs); i += 500 {
		e.enqueue(reqs[i:min(i+500, len(reqs))]...)
	}
	e.race(exactRun{
		queue: "q", bound: bound,
		counters: func(core.Job) []string { return []string{"queue q"} },
		sample: func() error {
			n, err := e.countRunning(core.JobFilter{Queue: "q"})
			if err != nil {
				return err
			}
			return atMost("CountJobs(queue q)", n, bound)
		},
	}, e.exactJobs())
}

func exactKeyLimit(e *env) {
	const bound = 2
	const keys = 5
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxRunningPerKey: bound})
	reqs := make([]core.EnqueueRequest, 0, e.exactJobs())
	for i := range e.exactJobs() {
		if i%10 == 9 {
			reqs = append(reqs, req("q", "t")) // unkeyed: exempt
			continue
		}
		// Runs of ten jobs of one key in claim order: a claim meets
		// more of a key than its limit and must pass them over.
		reqs = append(reqs, lreq("q", "t", fmt.Sprintf("k%d", i/10%keys)))
	}
	for i := 0; i < len(reqs); i += 500 {
		e.enqueue(reqs[i:min(i+500, len(reqs))]...)
	}
	e.race(exactRun{
		queue: "q", bound: bound,
		counters: func(j core.Job) []string {
			if j.LimitKey == "" {
				return nil
			}
			return []string{"key " + j.LimitKey}
		},
		sample: func() error {
			if err := e.keysAtMost("t", bound); err != nil {
				return err
			}
			if !e.h.Capabilities.Search {
				return nil
			}
			for k := range keys {
				key := fmt.Sprintf("k%d", k)
				m, err := e.b.(core.JobSearcher).CountSearch(e.ctx, core.JobSearch{LimitKey: key, JobFilter: core.JobFilter{Task: "t", States: []core.JobState{core.StateRunning}}})
				if err != nil {
					return err
				}
				if err := atMost("CountSearch(limit key "+key+")", m[core.StateRunning], bound); err != nil {
					return err
				}
			}
			return nil
		},
	}, e.exactJobs())
}

func exactSequence(e *env) {
	const seqs = 8
	reqs := make([]core.EnqueueRequest, 0, e.exactJobs())
	for i := range e.exactJobs() {
		reqs = append(reqs, sreq("q", "t", fmt.Sprintf("s%d", i%seqs)))
	}
	for i := 0; i < len(reqs); i += 500 {
		e.enqueue(reqs[i:min(i+500, len(reqs))]...)
	}
	var mu sync.Mutex
	last := map[string]string{}
	e.race(exactRun{
		queue: "q", bound: 1,
		counters: func(j core.Job) []string { return []string{"sequence " + j.SequenceKey} },
		claimed: func(j core.Job) error {
			mu.Lock()
			defer mu.Unlock()
			if prev := last[j.SequenceKey]; prev >= j.ID {
				return fmt.Errorf("sequence %s: %s ran after %s, out of id order", j.SequenceKey, j.ID, prev)
			}
			last[j.SequenceKey] = j.ID
			return nil
		},
		sample: func() error {
			if !e.h.Capabilities.Search {
				n, err := e.countRunning(core.JobFilter{Queue: "q"})
				if err != nil {
					return err
				}
				return atMost("CountJobs(queue q)", n, seqs)
			}
			for s := range seqs {
				key := fmt.Sprintf("s%d", s)
				m, err := e.b.(core.JobSearcher).CountSearch(e.ctx, core.JobSearch{SequenceKey: key, JobFilter: core.JobFilter{States: []core.JobState{core.StateRunning}}})
				if err != nil {
					return err
				}
				if err := atMost("CountSearch(sequence "+key+")", m[core.StateRunning], 1); err != nil {
					return err
				}
			}
			return nil
		},
	}, e.exactJobs())
}

// startWindows records claims per start window, from the store's own
// claim time (the lease's expiry less its TTL), and moves the clock when
// the claimers find nothing.
type startWindows struct {
	e     *env
	bound int
	mu    sync.Mutex
	n     map[string]int
}

func (s *startWindows) claimed(group string) func(j core.Job) error {
	return func(j core.Job) error {
		start := j.Lease.ExpiresAt.Add(-exactTTL)
		w := start.Truncate(time.Second)
		key := group + "@" + w.Format(time.RFC3339)
		if group == "key" {
			key = j.LimitKey + "@" + w.Format(time.RFC3339)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.n[key]++
		if s.n[key] > s.bound {
			return fmt.Errorf("%d starts of %s in the window %v, the limit is %d", s.n[key], key, w, s.bound)
		}
		return nil
	}
}

// report logs the busiest window.
func (s *startWindows) report() {
	s.mu.Lock()
	defer s.mu.Unlock()
	busiest := 0
	for _, n := range s.n {
		busiest = max(busiest, n)
	}
	s.e.t.Logf("%d windows of starts, at most %d in one (the limit is %d)", len(s.n), busiest, s.bound)
}

// idle moves the suite clock by 50 ms, so that new windows open.
func (s *startWindows) idle() { s.e.advance(50 * time.Millisecond) }

func exactTaskRate(e *env) {
	const rate = 50
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxStartsPerSecond: rate})
	e.enqueueN("q", "t", e.exactJobs())
	w := &startWindows{e: e, bound: rate, n: map[string]int{}}
	e.race(exactRun{
		queue: "q", bound: int64(e.exactJobs()),
		counters: func(core.Job) []string { return nil },
		claimed:  w.claimed("task"),
		idle:     w.idle,
	}, e.exactJobs())
	w.report()
	if len(w.n) < e.exactJobs()/rate {
		e.t.Fatalf("%d jobs started in %d windows; at most %d a window needs at least %d", e.exactJobs(), len(w.n), rate, e.exactJobs()/rate)
	}
}

func exactKeyRate(e *env) {
	const rate = 10
	const keys = 4
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxStartsPerSecondPerKey: rate, MaxRunningPerKey: 3})
	reqs := make([]core.EnqueueRequest, 0, e.exactJobs())
	for i := range e.exactJobs() {
		reqs = append(reqs, lreq("q", "t", fmt.Sprintf("k%d", i%keys)))
	}
	for i := 0; i < len(reqs); i += 500 {
		e.enqueue(reqs[i:min(i+500, len(reqs))]...)
	}
	w := &startWindows{e: e, bound: rate, n: map[string]int{}}
	e.race(exactRun{
		queue: "q", bound: 3,
		counters: func(j core.Job) []string { return []string{"key " + j.LimitKey} },
		claimed:  w.claimed("key"),
		idle:     w.idle,
		sample:   func() error { return e.keysAtMost("t", 3) },
	}, e.exactJobs())
	w.report()
}

// exactJobs is how many jobs one FlowExact race runs: the harness's
// FlowExactJobs, or 2,000.
func (e *env) exactJobs() int {
	if e.h.FlowExactJobs > 0 {
		return e.h.FlowExactJobs
	}
	return exactJobs
}
