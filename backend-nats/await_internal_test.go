package natsq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// The fan-in rules checked on the replica's state machine: every command
// goes through its encoding, and after each one the waits and their edges
// are checked against the jobs, and a replica rebuilt from a snapshot of
// the state must equal it.

type awaitDriver struct {
	t   *testing.T
	s   *state
	now time.Time
	req uint64
}

func newAwaitDriver(t *testing.T) *awaitDriver {
	return &awaitDriver{t: t, s: newState(), now: time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (d *awaitDriver) do(c command) outcome {
	d.t.Helper()
	d.req++
	c.Origin, c.Req, c.Now = "await", d.req, d.now
	data, err := json.Marshal(c)
	if err != nil {
		d.t.Fatal(err)
	}
	out, err := applyEncoded(d.s, data, d.now)
	if err != nil {
		d.t.Fatalf("%s: %v", c.Op, err)
	}
	if err := checkWaits(d.s); err != nil {
		d.t.Fatalf("after %s %d: %v", c.Op, d.req, err)
	}
	snap, err := d.s.encodeSnapshot()
	if err != nil {
		d.t.Fatal(err)
	}
	s2, err := decodeSnapshot(snap)
	if err != nil {
		d.t.Fatalf("after %s %d: decode snapshot: %v", c.Op, d.req, err)
	}
	if got, want := digest(s2), digest(d.s); got != want {
		d.t.Fatalf("after %s %d the snapshot restores another state:\n%s", c.Op, d.req, lineDiff(got, want))
	}
	return out
}

func (d *awaitDriver) enqueue(reqs ...core.EnqueueRequest) []core.Job {
	d.t.Helper()
	jobs, err := core.PrepareJobs(reqs, d.now, core.Limits{})
	if err != nil {
		d.t.Fatal(err)
	}
	out := d.do(command{Op: opEnqueue, V: flowVersion, Jobs: jobs})
	if out.err != nil {
		d.t.Fatal(out.err)
	}
	return jobs
}

func (d *awaitDriver) claim(queue string, ttl time.Duration) []core.Job {
	d.t.Helper()
	return d.do(command{Op: opClaim, Queue: queue, WorkerID: "w", Limit: 100, TTL: ttl}).jobs
}

// claimOne claims queue and requires exactly job id.
func (d *awaitDriver) claimOne(queue, id string) core.Job {
	d.t.Helper()
	jobs := d.claim(queue, time.Minute)
	if len(jobs) != 1 || jobs[0].ID != id {
		d.t.Fatalf("claim of %s = %v, want job %s", queue, jobIDsOf(jobs), id)
	}
	return jobs[0]
}

func (d *awaitDriver) await(l core.Lease, mode core.AwaitMode, until time.Time, cancelChildren bool, ids ...string) (core.AwaitResult, error) {
	d.t.Helper()
	out := d.do(command{Op: opAwait, V: awaitVersion, Lease: l, Await: &awaitCmd{JobIDs: ids, Mode: mode, Until: until, CancelChildren: cancelChildren}})
	return out.await, out.err
}

func (d *awaitDriver) job(id string) core.Job {
	d.t.Helper()
	r := d.s.jobs[id]
	if r == nil {
		d.t.Fatalf("job %s is gone", id)
	}
	return r.job
}

func (d *awaitDriver) wait(id string) core.Wait {
	d.t.Helper()
	w := d.s.waits[id]
	if w == nil {
		d.t.Fatalf("job %s has no wait", id)
	}
	return w.wait
}

// parked requires the waiter to sleep due at runAt under a wait with
// pending and woken.
func (d *awaitDriver) parked(id string, runAt time.Time, pending int, woken bool) {
	d.t.Helper()
	j, w := d.job(id), d.wait(id)
	if j.State != core.StateSleeping || !j.RunAt.Equal(runAt) || w.Pending != pending || w.Woken != woken {
		d.t.Fatalf("waiter %s is %s due %v, wait pending %d woken %v; want sleeping due %v, pending %d woken %v",
			id, j.State, j.RunAt, w.Pending, w.Woken, runAt, pending, woken)
	}
}

// checkWaits checks that every wait's open ids are exactly its edges: each
// names an existing job that is not terminal and lists the waiter once,
// and every waiter a job lists has a wait that has not counted the job.
func checkWaits(s *state) error {
	for id, w := range s.waits {
		if s.jobs[id] == nil {
			return fmt.Errorf("job %s is gone but its wait is kept", id)
		}
		if w.wait.JobID != id || w.wait.Pending != len(w.open) {
			return fmt.Errorf("wait of %s is %+v with %d open", id, w.wait, len(w.open))
		}
		for child := range w.open {
			ch := s.jobs[child]
			if ch == nil || ch.job.State.Terminal() {
				return fmt.Errorf("wait of %s has an edge on job %s, which is gone or terminal", id, child)
			}
			if n := countOf(ch.waiters, id); n != 1 {
				return fmt.Errorf("job %s lists waiter %s %d times", child, id, n)
			}
		}
	}
	for id, r := range s.jobs {
		if r.waiters != nil && len(r.waiters) == 0 {
			return fmt.Errorf("job %s has an empty, non-nil waiter list", id)
		}
		for _, wid := range r.waiters {
			w := s.waits[wid]
			if w == nil {
				return fmt.Errorf("job %s lists waiter %s, which has no wait", id, wid)
			}
			if _, ok := w.open[id]; !ok {
				return fmt.Errorf("job %s lists waiter %s, whose wait counted it", id, wid)
			}
		}
	}
	return nil
}

func countOf(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

// waitDigest describes the waits and edges of s, for digest.
func waitDigest(s *state, add func(string, ...any)) {
	for id, w := range s.waits {
		open := make([]string, 0, len(w.open))
		for c := range w.open {
			open = append(open, c)
		}
		sort.Strings(open)
		add("wait %s %+v open=%v", id, w.wait, open)
	}
	for id, r := range s.jobs {
		if r.waiters != nil {
			ws := slices.Clone(r.waiters)
			sort.Strings(ws)
			add("waiters %s %v", id, ws)
		}
	}
}

// Every path that ends an awaited job counts it and wakes its waiter, due
// at the time of the command that ended it; a retryable failure does not.
func TestAwaitEveryTerminalPath(t *testing.T) {
	type setup struct {
		req core.EnqueueRequest
		// claimed: the child is running (claimed with a one-second lease)
		// when the wait begins.
		claimed bool
	}
	for name, tc := range map[string]struct {
		child setup
		end   func(d *awaitDriver, child core.Job)
		// counted: the path ends the child.
		counted bool
		state   core.JobState // the child's state after end; "" for gone
	}{
		"complete": {setup{claimed: true}, func(d *awaitDriver, c core.Job) {
			d.do(command{Op: opComplete, Completions: []completionItem{{Lease: c.Lease, Result: []byte("r")}}})
		}, true, core.StateSucceeded},
		"fail-terminal": {setup{claimed: true}, func(d *awaitDriver, c core.Job) {
			d.do(command{Op: opFail, Lease: c.Lease, Error: "boom", Terminal: true})
		}, true, core.StateFailed},
		"fail-exhausted": {setup{req: core.EnqueueRequest{MaxAttempts: 1}, claimed: true}, func(d *awaitDriver, c core.Job) {
			d.do(command{Op: opFail, Lease: c.Lease, Error: "boom"})
		}, true, core.StateFailed},
		"fail-retried": {setup{claimed: true}, func(d *awaitDriver, c core.Job) {
			d.do(command{Op: opFail, Lease: c.Lease, Error: "boom"})
		}, false, core.StateQueued},
		"sleep": {setup{claimed: true}, func(d *awaitDriver, c core.Job) {
			d.do(command{Op: opSleep, Lease: c.Lease, Until: d.now.Add(time.Hour)})
		}, false, core.StateSleeping},
		"cancel": {setup{}, func(d *awaitDriver, c core.Job) {
			d.do(command{Op: opCancel, JobID: c.ID, Reason: "stop"})
		}, true, core.StateCancelled},
		"cancel-running": {setup{claimed: true}, func(d *awaitDriver, c core.Job) {
			d.do(command{Op: opCancel, JobID: c.ID, Reason: "stop"})
		}, true, core.StateCancelled},
		"claim-deadline": {setup{req: core.EnqueueRequest{Cancel: core.CancellationPolicy{MaxDelay: time.Second}}}, func(d *awaitDriver, c core.Job) {
			d.now = d.now.Add(2 * time.Second)
			if jobs := d.claim("c", time.Minute); slices.Contains(jobIDsOf(jobs), c.ID) {
				d.t.Fatalf("claimed %v past the deadline", jobIDsOf(jobs))
			}
		}, true, core.StateCancelled},
		"heartbeat-deadline": {setup{req: core.EnqueueRequest{Cancel: core.CancellationPolicy{MaxDuration: time.Second}}, claimed: true}, func(d *awaitDriver, c core.Job) {
			d.now = d.now.Add(2 * time.Second)
			d.do(command{Op: opHeartbeat, Lease: c.Lease, TTL: time.Minute})
		}, true, core.StateCancelled},
		"rescue-deadline": {setup{req: core.EnqueueRequest{Cancel: core.CancellationPolicy{MaxDuration: time.Second}}, claimed: true}, func(d *awaitDriver, c core.Job) {
			d.now = d.now.Add(2 * time.Second)
			d.do(command{Op: opRescue, Limit: 100})
		}, true, core.StateCancelled},
		"rescue-exhausted": {setup{req: core.EnqueueRequest{MaxAttempts: 1}, claimed: true}, func(d *awaitDriver, c core.Job) {
			d.now = d.now.Add(2 * time.Second)
			d.do(command{Op: opRescue, Limit: 100})
		}, true, core.StateFailed},
		"rescue-requeued": {setup{claimed: true}, func(d *awaitDriver, c core.Job) {
			d.now = d.now.Add(2 * time.Second)
			d.do(command{Op: opRescue, Limit: 100})
		}, false, core.StateQueued},
		"delete-job": {setup{}, func(d *awaitDriver, c core.Job) {
			d.do(command{Op: opDeleteJob, V: deleteVersion, JobID: c.ID})
		}, true, ""},
		"delete-job-forced": {setup{claimed: true}, func(d *awaitDriver, c core.Job) {
			d.do(command{Op: opDeleteJob, V: deleteVersion, JobID: c.ID, Force: true})
		}, true, ""},
		"delete-queue": {setup{}, func(d *awaitDriver, c core.Job) {
			if out := d.do(command{Op: opDeleteQ, V: deleteVersion, Queue: "c", Limit: 10}); !out.done {
				d.t.Fatal("queue c not deleted")
			}
		}, true, ""},
	} {
		t.Run(name, func(t *testing.T) {
			d := newAwaitDriver(t)
			parent := d.enqueue(core.EnqueueRequest{Queue: "p", Task: "parent", Cancel: core.CancellationPolicy{MaxDuration: time.Hour}})[0]
			creq := tc.child.req
			creq.Queue, creq.Task = "c", "child"
			other := d.enqueue(core.EnqueueRequest{Queue: "c", Task: "other"})[0]
			child := d.enqueue(creq)[0]
			if tc.child.claimed {
				jobs := d.claim("c", time.Second)
				if len(jobs) != 2 {
					t.Fatalf("claimed %v", jobIDsOf(jobs))
				}
				for _, j := range jobs {
					if j.ID == child.ID {
						child = j
					}
				}
			}
			p := d.claimOne("p", parent.ID)
			res, err := d.await(p.Lease, core.AwaitAll, time.Time{}, false, child.ID)
			if err != nil || res != (core.AwaitResult{Pending: 1}) {
				t.Fatalf("await = %+v, %v", res, err)
			}
			d.parked(parent.ID, core.WaitForever, 1, false)
			d.now = d.now.Add(time.Second)
			tc.end(d, child)
			if r := d.s.jobs[child.ID]; tc.state == "" && r != nil || tc.state != "" && (r == nil || r.job.State != tc.state) {
				t.Fatalf("child is %v, want %q", r, tc.state)
			}
			if d.s.jobs[other.ID] == nil && tc.state != "" {
				t.Fatal("the other job is gone")
			}
			if !tc.counted {
				d.parked(parent.ID, core.WaitForever, 1, false)
				return
			}
			d.parked(parent.ID, d.now, 0, true)
			// The woken job is claimed as from a sleep: same attempt.
			if j := d.claimOne("p", parent.ID); j.Attempt != p.Attempt || j.Lease.Token != p.Lease.Token+1 {
				t.Fatalf("woken job claimed at attempt %d token %d, want %d and %d", j.Attempt, j.Lease.Token, p.Attempt, p.Lease.Token+1)
			}
			if w := d.wait(parent.ID); !w.Woken || w.Token != p.Lease.Token {
				t.Fatalf("wait after the claim = %+v", w)
			}
		})
	}
}

// Awaited jobs already terminal count at once; a wait satisfied at once
// parks the job due now. AwaitAny wakes at the first count and keeps
// counting.
func TestAwaitModes(t *testing.T) {
	d := newAwaitDriver(t)
	parent := d.enqueue(core.EnqueueRequest{Queue: "p", Task: "t"})[0]
	kids := d.enqueue(core.EnqueueRequest{Queue: "c", Task: "t"}, core.EnqueueRequest{Queue: "c", Task: "t"}, core.EnqueueRequest{Queue: "c", Task: "t"})
	ids := []string{kids[0].ID, kids[1].ID, kids[2].ID}
	d.do(command{Op: opCancel, JobID: kids[0].ID, Reason: "x"})

	p := d.claimOne("p", parent.ID)
	until := d.now.Add(time.Hour)
	res, err := d.await(p.Lease, core.AwaitAny, until, false, ids...)
	if err != nil || res != (core.AwaitResult{Pending: 2, Woken: true}) {
		t.Fatalf("await any with one terminal = %+v, %v", res, err)
	}
	d.parked(parent.ID, d.now, 2, true)

	d.now = d.now.Add(time.Second)
	p = d.claimOne("p", parent.ID)
	res, err = d.await(p.Lease, core.AwaitAll, until, false, ids...)
	if err != nil || res != (core.AwaitResult{Pending: 2}) {
		t.Fatalf("await all = %+v, %v", res, err)
	}
	d.parked(parent.ID, until, 2, false)
	d.now = d.now.Add(time.Second)
	d.do(command{Op: opCancel, JobID: kids[1].ID, Reason: "x"})
	d.parked(parent.ID, until, 1, false)
	// A Retry of a counted job does not undo the count.
	d.do(command{Op: opRetry, JobID: kids[1].ID})
	d.parked(parent.ID, until, 1, false)
	d.now = d.now.Add(time.Second)
	d.do(command{Op: opDeleteJob, V: deleteVersion, JobID: kids[2].ID})
	d.parked(parent.ID, d.now, 0, true)
	if w := d.wait(parent.ID); !slices.Equal(w.JobIDs, ids) || w.Mode != core.AwaitAll || !w.Until.Equal(until) {
		t.Fatalf("wait = %+v", w)
	}

	// Any: the second count after the wake changes only Pending.
	d.now = d.now.Add(time.Second)
	p = d.claimOne("p", parent.ID)
	more := d.enqueue(core.EnqueueRequest{Queue: "c", Task: "t"}, core.EnqueueRequest{Queue: "c", Task: "t"})
	if _, err := d.await(p.Lease, core.AwaitAny, time.Time{}, false, more[0].ID, more[1].ID); err != nil {
		t.Fatal(err)
	}
	d.now = d.now.Add(time.Second)
	woke := d.now
	d.do(command{Op: opCancel, JobID: more[1].ID})
	d.parked(parent.ID, woke, 1, true)
	d.now = d.now.Add(time.Second)
	d.do(command{Op: opCancel, JobID: more[0].ID})
	d.parked(parent.ID, woke, 0, true)
}

// A wait left behind by a later claim counts its jobs but never wakes or
// cancels anything; a new wait replaces the old one and its edges.
func TestAwaitStaleAndReplaced(t *testing.T) {
	d := newAwaitDriver(t)
	parent := d.enqueue(core.EnqueueRequest{Queue: "p", Task: "t"})[0]
	kids := d.enqueue(core.EnqueueRequest{Queue: "c", Task: "t"}, core.EnqueueRequest{Queue: "c", Task: "t"})
	p := d.claimOne("p", parent.ID)
	if _, err := d.await(p.Lease, core.AwaitAll, d.now.Add(time.Second), true, kids[0].ID); err != nil {
		t.Fatal(err)
	}
	d.now = d.now.Add(2 * time.Second)
	p = d.claimOne("p", parent.ID) // at Until
	sleepUntil := d.now.Add(time.Hour)
	d.do(command{Op: opSleep, Lease: p.Lease, Until: sleepUntil})
	d.do(command{Op: opCancel, JobID: kids[0].ID})
	if j, w := d.job(parent.ID), d.wait(parent.ID); !j.RunAt.Equal(sleepUntil) || w.Pending != 0 || w.Woken {
		t.Fatalf("a stale wait woke its job: %+v, %+v", j, w)
	}
	// A stale wait with CancelChildren cancels nothing.
	d.now = d.now.Add(2 * time.Hour)
	p = d.claimOne("p", parent.ID)
	if _, err := d.await(p.Lease, core.AwaitAll, d.now.Add(time.Second), true, kids[1].ID); err != nil {
		t.Fatal(err)
	}
	d.now = d.now.Add(2 * time.Second)
	p = d.claimOne("p", parent.ID)
	d.do(command{Op: opSleep, Lease: p.Lease, Until: d.now.Add(time.Hour)})
	d.do(command{Op: opCancel, JobID: parent.ID})
	if j := d.job(kids[1].ID); j.State != core.StateQueued {
		t.Fatalf("a stale wait cancelled its child: %s", j.State)
	}

	// Replacement drops the old edges.
	d2 := newAwaitDriver(t)
	parent = d2.enqueue(core.EnqueueRequest{Queue: "p", Task: "t"})[0]
	kids = d2.enqueue(core.EnqueueRequest{Queue: "c", Task: "t"}, core.EnqueueRequest{Queue: "c", Task: "t"})
	p = d2.claimOne("p", parent.ID)
	if _, err := d2.await(p.Lease, core.AwaitAll, d2.now.Add(time.Second), false, kids[0].ID); err != nil {
		t.Fatal(err)
	}
	d2.now = d2.now.Add(2 * time.Second)
	p = d2.claimOne("p", parent.ID)
	if _, err := d2.await(p.Lease, core.AwaitAll, time.Time{}, false, kids[1].ID); err != nil {
		t.Fatal(err)
	}
	if d2.s.jobs[kids[0].ID].waiters != nil {
		t.Fatal("the replaced wait keeps its edge")
	}
	if w := d2.wait(parent.ID); !slices.Equal(w.JobIDs, []string{kids[1].ID}) || w.Token != p.Lease.Token {
		t.Fatalf("wait = %+v", w)
	}
	d2.do(command{Op: opCancel, JobID: kids[0].ID})
	d2.parked(parent.ID, core.WaitForever, 1, false)
	d2.do(command{Op: opCancel, JobID: kids[1].ID})
	d2.parked(parent.ID, d2.now, 0, true)
}

// A waiter cancelled while its current wait has CancelChildren cancels its
// jobs that are not terminal, through nested waits, by Cancel and by its
// cancellation deadline; deleting a waiter removes its wait and edges.
func TestAwaitCancelChildrenAndDeletion(t *testing.T) {
	for _, how := range []string{"cancel", "deadline-rescue", "deadline-claim"} {
		t.Run(how, func(t *testing.T) {
			d := newAwaitDriver(t)
			parent := d.enqueue(core.EnqueueRequest{Queue: "p", Task: "t", Cancel: core.CancellationPolicy{MaxDuration: time.Minute}})[0]
			// kids[0] runs, kids[1] is queued, kids[2] succeeded, kids[3]
			// waits on grandchild with CancelChildren.
			kids := d.enqueue(core.EnqueueRequest{Queue: "c0", Task: "t"}, core.EnqueueRequest{Queue: "c1", Task: "t"},
				core.EnqueueRequest{Queue: "c2", Task: "t"}, core.EnqueueRequest{Queue: "m", Task: "t"})
			grand := d.enqueue(core.EnqueueRequest{Queue: "g", Task: "t"})[0]
			run0 := d.claimOne("c0", kids[0].ID)
			done := d.claimOne("c2", kids[2].ID)
			d.do(command{Op: opComplete, Completions: []completionItem{{Lease: done.Lease}}})
			mid := d.claimOne("m", kids[3].ID)
			if _, err := d.await(mid.Lease, core.AwaitAll, time.Time{}, true, grand.ID); err != nil {
				t.Fatal(err)
			}
			p := d.claimOne("p", parent.ID)
			ids := []string{kids[0].ID, kids[1].ID, kids[2].ID, kids[3].ID}
			// For the claim's deadline the parent must be due: AwaitAny is
			// satisfied at once by the child that succeeded.
			mode := core.AwaitAll
			if how == "deadline-claim" {
				mode = core.AwaitAny
			}
			if res, err := d.await(p.Lease, mode, time.Time{}, true, ids...); err != nil || res.Pending != 3 || res.Woken != (mode == core.AwaitAny) {
				t.Fatalf("await = %+v, %v", res, err)
			}
			d.now = d.now.Add(2 * time.Minute)
			switch how {
			case "cancel":
				d.do(command{Op: opCancel, JobID: parent.ID, Reason: "stop"})
			case "deadline-rescue":
				if res := d.do(command{Op: opRescue, Limit: 100}).rescue; res.Cancelled != 1 {
					t.Fatalf("rescue = %+v", res)
				}
			case "deadline-claim":
				if jobs := d.claim("p", time.Minute); len(jobs) != 0 {
					t.Fatalf("claimed %v past the deadline", jobIDsOf(jobs))
				}
			}
			for _, id := range []string{parent.ID, kids[0].ID, kids[1].ID, kids[3].ID, grand.ID} {
				if j := d.job(id); j.State != core.StateCancelled || !j.FinishedAt.Equal(d.now) {
					t.Fatalf("job %s is %s at %v, want cancelled at %v", id, j.State, j.FinishedAt, d.now)
				}
			}
			if j := d.job(kids[2].ID); j.State != core.StateSucceeded {
				t.Fatalf("terminal child became %s", j.State)
			}
			if run := d.s.jobs[kids[0].ID].runs; run[len(run)-1].Status != core.RunCancelled {
				t.Fatalf("running child's run is %s", run[len(run)-1].Status)
			}
			if _, err := d.s.fenced(run0.Lease); !errors.Is(err, core.ErrLeaseLost) {
				t.Fatalf("the cancelled child's lease = %v", err)
			}
			if w := d.wait(parent.ID); w.Pending != 0 || w.Woken != (mode == core.AwaitAny) {
				t.Fatalf("cancelled parent's wait = %+v", w)
			}
			// Cleanup of the cancelled parent and its children leaves no wait.
			d.do(command{Op: opCleanup, Before: d.now.Add(time.Second), Limit: 100})
			if len(d.s.waits) != 0 || len(d.s.jobs) != 0 {
				t.Fatalf("cleanup left %d waits, %d jobs", len(d.s.waits), len(d.s.jobs))
			}
		})
	}

	d := newAwaitDriver(t)
	parent := d.enqueue(core.EnqueueRequest{Queue: "p", Task: "t"})[0]
	kid := d.enqueue(core.EnqueueRequest{Queue: "c", Task: "t"})[0]
	p := d.claimOne("p", parent.ID)
	if _, err := d.await(p.Lease, core.AwaitAll, time.Time{}, true, kid.ID); err != nil {
		t.Fatal(err)
	}
	d.do(command{Op: opDeleteJob, V: deleteVersion, JobID: parent.ID})
	if len(d.s.waits) != 0 || d.s.jobs[kid.ID].waiters != nil || d.job(kid.ID).State != core.StateQueued {
		t.Fatalf("deleting the waiter left waits %v, edges %v, child %s", d.s.waits, d.s.jobs[kid.ID].waiters, d.job(kid.ID).State)
	}
}

// A refused wait changes nothing and keeps the claim.
func TestAwaitRefused(t *testing.T) {
	d := newAwaitDriver(t)
	parent := d.enqueue(core.EnqueueRequest{Queue: "p", Task: "t"})[0]
	kid := d.enqueue(core.EnqueueRequest{Queue: "c", Task: "t"})[0]
	p := d.claimOne("p", parent.ID)
	before := digest(d.s)
	stale := p.Lease
	stale.Token++
	for name, tc := range map[string]struct {
		lease core.Lease
		mode  core.AwaitMode
		ids   []string
		want  error
	}{
		"stale lease":   {stale, core.AwaitAll, []string{kid.ID}, core.ErrLeaseLost},
		"unknown job":   {p.Lease, core.AwaitAll, []string{kid.ID, core.NewID(d.now)}, core.ErrNotFound},
		"itself":        {p.Lease, core.AwaitAll, []string{parent.ID}, core.ErrInvalidArgument},
		"bad mode":      {p.Lease, "most", []string{kid.ID}, core.ErrInvalidArgument},
		"twice":         {p.Lease, core.AwaitAny, []string{kid.ID, kid.ID}, core.ErrInvalidArgument},
		"no jobs":       {p.Lease, core.AwaitAny, nil, core.ErrInvalidArgument},
		"other's claim": {core.Lease{JobID: kid.ID, Token: 1}, core.AwaitAll, []string{parent.ID}, core.ErrLeaseLost},
	} {
		if _, err := d.await(tc.lease, tc.mode, time.Time{}, false, tc.ids...); !errors.Is(err, tc.want) {
			t.Errorf("%s: await = %v, want %v", name, err, tc.want)
		}
		if got := digest(d.s); got != before {
			t.Fatalf("%s: the refused wait changed the state:\n%s", name, lineDiff(got, before))
		}
	}
	if out := d.do(command{Op: opAwait, V: awaitVersion, Lease: p.Lease}); !errors.Is(out.err, core.ErrInvalidArgument) {
		t.Fatalf("await without a request = %v", out.err)
	}
	if _, err := d.s.fenced(p.Lease); err != nil {
		t.Fatalf("the claim was lost: %v", err)
	}
}

// A snapshot of a state with waits has version 2, which a version before
// fan-in refuses; one without waits keeps version 1. A decoded snapshot
// whose waits do not match its jobs is refused.
func TestAwaitSnapshotVersion(t *testing.T) {
	d := newAwaitDriver(t)
	parent := d.enqueue(core.EnqueueRequest{Queue: "p", Task: "t"})[0]
	kid := d.enqueue(core.EnqueueRequest{Queue: "c", Task: "t"})[0]
	version := func() int {
		data, err := d.s.encodeSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Version int `json:"version"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Version
	}
	if v := version(); v != 1 {
		t.Fatalf("snapshot without waits has version %d", v)
	}
	p := d.claimOne("p", parent.ID)
	if _, err := d.await(p.Lease, core.AwaitAll, time.Time{}, false, kid.ID); err != nil {
		t.Fatal(err)
	}
	if v := version(); v != awaitSnapshotVersion {
		t.Fatalf("snapshot with a wait has version %d", v)
	}
	data, err := d.s.encodeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(data), `"open":["`+kid.ID+`"]`, `"open":["`+core.NewID(d.now)+`"]`, 1)
	if broken == string(data) {
		t.Fatal("the snapshot does not list the open id")
	}
	if _, err := decodeSnapshot([]byte(broken)); !errors.Is(err, core.ErrInvalidState) {
		t.Fatalf("inconsistent snapshot = %v", err)
	}
	d.do(command{Op: opDeleteJob, V: deleteVersion, JobID: parent.ID})
	if v := version(); v != 1 {
		t.Fatalf("snapshot after the waiter's deletion has version %d", v)
	}
}

// workAwait runs waits in queues "fan" (waiters) and "fanc" (children):
// each round a job of "fan" waits on two new children and one of an
// earlier round, bounded or not, with CancelChildren or not; a child is
// completed, and every third round the new waiter is cancelled.
func workAwait(t *testing.T, b *Backend, clock *core.ManualClock, i int) {
	t.Helper()
	ctx := context.Background()
	res, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "fan", Task: "parent"},
		{Queue: "fanc", Task: "child"}, {Queue: "fanc", Task: "child", Priority: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{res[1].Job.ID, res[2].Job.ID}
	page, err := b.ListJobs(ctx, core.JobFilter{Queue: "fanc", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if old := page.Jobs[0].ID; !slices.Contains(ids, old) {
		ids = append(ids, old)
	}
	jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "fan", WorkerID: "w", Limit: 1, LeaseTTL: time.Minute})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim fan: %v %v", jobIDsOf(jobs), err)
	}
	until := time.Time{}
	if i%2 == 0 {
		until = clock.Now().Add(3 * time.Second)
	}
	mode := core.AwaitAll
	if i%4 == 1 {
		mode = core.AwaitAny
	}
	if _, err := b.AwaitJobs(ctx, core.AwaitRequest{Lease: jobs[0].Lease, JobIDs: ids, Mode: mode, Until: until, CancelChildren: i%3 != 1}); err != nil {
		t.Fatal(err)
	}
	kids, err := b.Claim(ctx, core.ClaimRequest{Queue: "fanc", WorkerID: "w", Limit: 1, LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kids {
		if _, err := b.Complete(ctx, []core.Completion{{Lease: k.Lease}}); err != nil {
			t.Fatal(err)
		}
	}
	if i%3 == 2 {
		if _, err := b.Cancel(ctx, jobs[0].ID, "stop"); err != nil {
			t.Fatal(err)
		}
	}
}

// Without a DecisionClock a wake is decided at the server's timestamp of
// the command that satisfies the wait: the waiter is due at the instant
// the child finished, in every replica, and a replica started from a
// snapshot taken with the wait open wakes it the same way.
func TestAwaitServerTime(t *testing.T) {
	nc := internalServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := Options{Namespace: "awaitts", CompactEvery: -1, CompactKeep: 1}
	open := func() *Backend {
		b, err := New(ctx, nc, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	a, b := open(), open()
	res, err := a.Enqueue(ctx, []core.EnqueueRequest{{Queue: "p", Task: "t"}, {Queue: "c", Task: "t"}, {Queue: "c", Task: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	parent, k1, k2 := res[0].Job, res[1].Job, res[2].Job
	jobs, err := a.Claim(ctx, core.ClaimRequest{Queue: "p", WorkerID: "w", Limit: 1, LeaseTTL: time.Minute})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v %v", jobs, err)
	}
	ar, err := a.AwaitJobs(ctx, core.AwaitRequest{Lease: jobs[0].Lease, JobIDs: []string{k1.ID, k2.ID}, Mode: core.AwaitAll})
	if err != nil || ar != (core.AwaitResult{Pending: 2}) {
		t.Fatalf("await = %+v, %v", ar, err)
	}
	if _, err := a.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	c := open() // from the snapshot
	kids, err := b.Claim(ctx, core.ClaimRequest{Queue: "c", WorkerID: "w", Limit: 2, LeaseTTL: time.Minute})
	if err != nil || len(kids) != 2 {
		t.Fatalf("claim children: %v %v", kids, err)
	}
	for _, k := range kids {
		time.Sleep(5 * time.Millisecond)
		if _, err := b.Complete(ctx, []core.Completion{{Lease: k.Lease}}); err != nil {
			t.Fatal(err)
		}
	}
	last, err := b.GetJob(ctx, kids[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*Backend{"issuer": a, "completer": b, "from snapshot": c} {
		if err := r.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		j, err := r.GetJob(ctx, parent.ID)
		if err != nil {
			t.Fatal(err)
		}
		w, err := r.JobWait(ctx, parent.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != core.StateSleeping || !j.RunAt.Equal(last.FinishedAt) || !w.Woken || w.Pending != 0 {
			t.Fatalf("%s: parent %s due %v, wait %+v; want due at the last child's finish %v", name, j.State, j.RunAt, w, last.FinishedAt)
		}
	}
	a.mu.RLock()
	want := digest(a.st)
	a.mu.RUnlock()
	c.mu.RLock()
	got := digest(c.st)
	c.mu.RUnlock()
	if got != want {
		t.Fatalf("the replica from the snapshot differs:\n%s", lineDiff(got, want))
	}
	if _, err := a.JobWait(ctx, k1.ID); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("JobWait of a job that never waited = %v", err)
	}
}

// CancelChildren cancels an awaited job that was counted and retried too:
// every awaited job that is not terminal goes with its waiting job.
func TestAwaitCancelChildrenRetried(t *testing.T) {
	d := newAwaitDriver(t)
	parent := d.enqueue(core.EnqueueRequest{Queue: "p", Task: "t"})[0]
	kids := d.enqueue(core.EnqueueRequest{Queue: "c", Task: "t"}, core.EnqueueRequest{Queue: "c", Task: "t"})
	p := d.claimOne("p", parent.ID)
	if _, err := d.await(p.Lease, core.AwaitAll, time.Time{}, true, kids[0].ID, kids[1].ID); err != nil {
		t.Fatal(err)
	}
	d.do(command{Op: opCancel, JobID: kids[0].ID, Reason: "x"})
	d.do(command{Op: opRetry, JobID: kids[0].ID})
	d.parked(parent.ID, core.WaitForever, 1, false)
	d.do(command{Op: opCancel, JobID: parent.ID, Reason: "stop"})
	for _, k := range kids {
		if j := d.job(k.ID); j.State != core.StateCancelled || j.LastError != "waiting job "+parent.ID+" cancelled: stop" {
			t.Fatalf("child %s is %s (%q), want cancelled with its parent", k.ID, j.State, j.LastError)
		}
	}
	if w := d.wait(parent.ID); w.Pending != 0 || w.Woken {
		t.Fatalf("wait = %+v", w)
	}
}
