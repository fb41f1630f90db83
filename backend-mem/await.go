package mem

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/boson-go/boson/core"
)

// Fan-in (core.Awaiter). A wait is a waitRec, kept in store.waits by the
// waiting job's id until the job waits again or is deleted. Each awaited
// job that was not terminal when the wait began holds an edge to it in
// store.edges and has its awaited flag set; the flag is all that a job
// without waiters costs on its way to a terminal state. The first
// terminal transition (attach) or deletion of an awaited job counts every
// edge it holds and drops them, so a Retry never undoes a count.

// waitRec is one wait.
type waitRec struct {
	w core.Wait
	// replaced is set once the job waits again or is deleted: its edges
	// no longer count.
	replaced bool
}

var _ core.Awaiter = (*Backend)(nil)

// AwaitJobs parks the running job of req.Lease as sleeping until the
// jobs it names are terminal (all or any, by req.Mode) or req.Until
// comes, in one step under the lock: the run ends as [core.RunSleeping],
// the lease no longer holds and no attempt is consumed. Awaited jobs
// already terminal count at once; a wait satisfied at once parks the job
// due now. An invalid request gives [core.ErrInvalidArgument], a stale
// lease [core.ErrLeaseLost] and an unknown awaited job [core.ErrNotFound],
// each changing nothing. Cost: O(k) for k awaited jobs, plus O(log n) to
// find each.
func (b *Backend) AwaitJobs(ctx context.Context, req core.AwaitRequest) (core.AwaitResult, error) {
	if err := b.usable(ctx); err != nil {
		return core.AwaitResult{}, err
	}
	if err := core.ValidateAwait(req); err != nil {
		return core.AwaitResult{}, err
	}
	ids := slices.Clone(req.JobIDs)
	if err := b.lock(ctx); err != nil {
		return core.AwaitResult{}, err
	}
	defer b.mu.Unlock()
	s := b.s
	now := b.now()

	r, err := s.fence(req.Lease)
	if err != nil {
		return core.AwaitResult{}, err
	}
	children := make([]*jobRec, len(ids))
	pending := 0
	for i, id := range ids {
		c := s.ids.find(id)
		if c == nil {
			return core.AwaitResult{}, fmt.Errorf("%w: awaited job %q", core.ErrNotFound, id)
		}
		if !recState(c).Terminal() {
			children[i] = c
			pending++
		}
	}
	s.dropWait(r)
	w := &waitRec{w: core.Wait{
		JobID:          r.id,
		JobIDs:         ids,
		Mode:           req.Mode,
		CancelChildren: req.CancelChildren,
		Pending:        pending,
		Token:          req.Lease.Token,
	}}
	if !req.Until.IsZero() {
		w.w.Until = req.Until.UTC().Truncate(time.Microsecond)
	}
	w.w.Woken = req.Mode.Satisfied(len(ids), pending)
	if s.waits == nil {
		s.waits = map[string]*waitRec{}
		s.edges = map[string][]*waitRec{}
	}
	s.waits[r.id] = w
	r.waiting = true
	for _, c := range children {
		if c == nil {
			continue
		}
		es := s.edges[c.id]
		if len(es) > 0 {
			es = slices.DeleteFunc(es, func(e *waitRec) bool { return e.replaced })
		}
		s.edges[c.id] = append(es, w)
		c.awaited = true
	}

	s.detach(r, now)
	s.endRun(r, core.RunSleeping, "", now)
	r.job.State = core.StateSleeping
	if w.w.Woken {
		r.job.RunAt = now
	} else {
		r.job.RunAt = laterOf(req.WakeAt(), now)
	}
	s.attach(r, core.StateRunning, now)
	return core.AwaitResult{Pending: pending, Woken: w.w.Woken}, nil
}

// JobWait returns the latest wait the job began, or [core.ErrNotFound].
func (b *Backend) JobWait(ctx context.Context, jobID string) (core.Wait, error) {
	if err := b.usable(ctx); err != nil {
		return core.Wait{}, err
	}
	if err := core.ValidateJobID(jobID); err != nil {
		return core.Wait{}, err
	}
	if err := b.lock(ctx); err != nil {
		return core.Wait{}, err
	}
	defer b.mu.Unlock()
	w := b.s.waits[jobID]
	if w == nil {
		return core.Wait{}, fmt.Errorf("%w: job %q has no wait", core.ErrNotFound, jobID)
	}
	out := w.w
	out.JobIDs = slices.Clone(w.w.JobIDs)
	return out, nil
}

// recState is r's state, also while r is frozen.
func recState(r *jobRec) core.JobState {
	if r.jobBody != nil {
		return r.job.State
	}
	return core.AllStates[r.final]
}

// dropWait forgets r's wait, if it has one: its edges stop counting.
func (s *store) dropWait(r *jobRec) {
	if !r.waiting {
		return
	}
	if w := s.waits[r.id]; w != nil {
		w.replaced = true
		delete(s.waits, r.id)
	}
	r.waiting = false
}

// current reports whether w still holds its job r parked: r sleeps under
// the token of the run that began w.
func current(w *waitRec, r *jobRec) bool {
	return r.jobBody != nil && r.job.State == core.StateSleeping && r.job.Lease.Token == w.w.Token
}

// counted counts r, an awaited job that just became terminal or is being
// deleted, in every wait that awaits it, and wakes each waiting job whose
// wait that satisfies while it is current.
func (s *store) counted(r *jobRec, now time.Time) {
	r.awaited = false
	es := s.edges[r.id]
	delete(s.edges, r.id)
	for _, w := range es {
		if w.replaced || w.w.Pending == 0 {
			continue
		}
		w.w.Pending--
		if w.w.Woken || !w.w.Mode.Satisfied(len(w.w.JobIDs), w.w.Pending) {
			continue
		}
		p := s.ids.find(w.w.JobID)
		if p == nil || !current(w, p) {
			continue
		}
		w.w.Woken = true
		if p.job.RunAt.After(now) {
			s.detach(p, now)
			p.job.RunAt = now
			s.attach(p, core.StateSleeping, now)
		}
	}
}

// cancelChildren cancels, after the cancellation of its waiting job, the
// awaited jobs of w that are not terminal. w must have been current just
// before the cancellation.
func (s *store) cancelChildren(w *waitRec, reason string, now time.Time) {
	reason = core.TruncateError(fmt.Sprintf("waiting job %s cancelled: %s", w.w.JobID, reason))
	for _, id := range w.w.JobIDs {
		if c := s.ids.find(id); c != nil && c.jobBody != nil && c.job.State.Active() {
			s.cancel(c, reason, now)
		}
	}
}
