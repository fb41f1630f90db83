package natsq

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/boson-go/boson/core"
)

// Fan-in. A wait is part of the replicated state: opAwait parks the
// waiting job and records its wait, and every later transition that ends
// an awaited job counts it in the same command, so every replica wakes the
// same job at the same position and time. An awaited job that is not yet
// counted carries, in its record's waiters, the ids of the jobs waiting on
// it (its edges); a job that nobody awaits has none, and its transitions
// pay one length check for fan-in.

var _ core.Awaiter = (*Backend)(nil)

// awaitCmd is the request of an opAwait command, already validated.
type awaitCmd struct {
	JobIDs         []string       `json:"ids"`
	Mode           core.AwaitMode `json:"mode"`
	Until          time.Time      `json:"until"`
	CancelChildren bool           `json:"cancel_children,omitempty"`
}

// waitRec is the latest wait of one job.
type waitRec struct {
	// wait.Pending is always len(open).
	wait core.Wait
	// open holds the awaited ids not yet counted; the record of each
	// names this wait's job among its waiters.
	open map[string]struct{}
}

// current reports whether the wait still governs r, its job: r sleeps
// under the token of the run that began the wait.
func (w *waitRec) current(r *jobRec) bool {
	return r.job.State == core.StateSleeping && r.job.Lease.Token == w.wait.Token
}

// AwaitJobs implements core.Awaiter. The wait is one command of the log
// (version 5): in one step every replica checks the lease and the awaited
// ids, ends the run as sleeping, records the wait with an edge on each
// awaited job that is not terminal, and parks the job until Until, or due
// at the command's time when the wait is satisfied at once.
func (b *Backend) AwaitJobs(ctx context.Context, req core.AwaitRequest) (core.AwaitResult, error) {
	if err := b.isClosed(); err != nil {
		return core.AwaitResult{}, err
	}
	if err := core.ValidateAwait(req); err != nil {
		return core.AwaitResult{}, err
	}
	until := time.Time{}
	if !req.Until.IsZero() {
		until = req.Until.UTC().Truncate(time.Microsecond)
	}
	out, err := b.exec(ctx, &command{Op: opAwait, V: awaitVersion, Now: b.stamp(), Lease: req.Lease,
		Await: &awaitCmd{JobIDs: req.JobIDs, Mode: req.Mode, Until: until, CancelChildren: req.CancelChildren}})
	if err != nil {
		return core.AwaitResult{}, err
	}
	return out.await, out.err
}

// JobWait implements core.Awaiter, on this replica once it has applied the
// log as far as reads do.
func (b *Backend) JobWait(ctx context.Context, jobID string) (core.Wait, error) {
	if err := b.readable(ctx); err != nil {
		return core.Wait{}, err
	}
	if err := core.ValidateJobID(jobID); err != nil {
		return core.Wait{}, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	w, ok := b.st.waits[jobID]
	if !ok {
		return core.Wait{}, fmt.Errorf("%w: job %s has no wait", core.ErrNotFound, jobID)
	}
	out := w.wait
	out.JobIDs = slices.Clone(out.JobIDs)
	return out, nil
}

// applyAwait begins the wait of c.Lease's job. Nothing changes when the
// lease is stale, the request invalid or an awaited job missing.
func (s *state) applyAwait(c *command) outcome {
	a := c.Await
	if a == nil {
		return outcome{err: fmt.Errorf("%w: await command without a request", core.ErrInvalidArgument)}
	}
	req := core.AwaitRequest{Lease: c.Lease, JobIDs: a.JobIDs, Mode: a.Mode, Until: a.Until, CancelChildren: a.CancelChildren}
	if err := core.ValidateAwait(req); err != nil {
		return outcome{err: err}
	}
	r, err := s.fenced(c.Lease)
	if err != nil {
		return outcome{err: err}
	}
	children := make([]*jobRec, len(a.JobIDs))
	for i, id := range a.JobIDs {
		if children[i] = s.jobs[id]; children[i] == nil {
			return outcome{err: fmt.Errorf("%w: awaited job %s", core.ErrNotFound, id)}
		}
	}
	s.dropWait(r.job.ID)
	w := &waitRec{
		wait: core.Wait{JobID: r.job.ID, JobIDs: slices.Clone(a.JobIDs), Mode: a.Mode, Until: a.Until,
			CancelChildren: a.CancelChildren, Token: r.job.Lease.Token},
		open: make(map[string]struct{}, len(a.JobIDs)),
	}
	for _, ch := range children {
		if !ch.job.State.Terminal() {
			w.open[ch.job.ID] = struct{}{}
			ch.waiters = append(ch.waiters, r.job.ID)
		}
	}
	w.wait.Pending = len(w.open)
	w.wait.Woken = a.Mode.Satisfied(len(a.JobIDs), w.wait.Pending)
	s.waits[r.job.ID] = w
	s.unindex(r)
	r.closeRun(core.RunSleeping, c.Now, "")
	r.job.State = core.StateSleeping
	r.job.RunAt = c.Now
	if at := req.WakeAt(); !w.wait.Woken && at.After(c.Now) {
		r.job.RunAt = at
	}
	s.index(r)
	return outcome{await: core.AwaitResult{Pending: w.wait.Pending, Woken: w.wait.Woken}}
}

// countAwaited counts r, which just reached a terminal state or is being
// removed, in every wait that awaits it and has not counted it, and wakes
// the jobs whose current wait that satisfies. index calls it for a
// terminal job with edges, remove for a removed one.
func (s *state) countAwaited(r *jobRec) {
	waiters := r.waiters
	r.waiters = nil
	for _, id := range waiters {
		w := s.waits[id]
		if w == nil {
			panic(fmt.Sprintf("job %s names job %s as waiting on it, which has no wait", r.job.ID, id))
		}
		if _, ok := w.open[r.job.ID]; !ok {
			panic(fmt.Sprintf("job %s names job %s as waiting on it, whose wait counted it", r.job.ID, id))
		}
		delete(w.open, r.job.ID)
		w.wait.Pending = len(w.open)
		if w.wait.Woken || !w.wait.Mode.Satisfied(len(w.wait.JobIDs), w.wait.Pending) {
			continue
		}
		wr := s.jobs[id]
		if wr == nil || !w.current(wr) {
			continue
		}
		w.wait.Woken = true
		if wr.job.RunAt.After(s.now) {
			s.unindex(wr)
			wr.job.RunAt = s.now
			s.index(wr)
		}
	}
}

// dropWait removes the wait of job id, if any, with its edges.
func (s *state) dropWait(id string) {
	w, ok := s.waits[id]
	if !ok {
		return
	}
	for child := range w.open {
		if ch := s.jobs[child]; ch != nil {
			ch.waiters = slices.DeleteFunc(ch.waiters, func(x string) bool { return x == id })
			if len(ch.waiters) == 0 {
				ch.waiters = nil
			}
		}
	}
	delete(s.waits, id)
}

// cancelChildren cancels, for the wait w of a job being cancelled, every
// awaited job that is not terminal (a counted one that was retried
// included), in request order. Each cancellation counts as usual and
// cancels in turn the children of a cancelled job that waits with
// CancelChildren.
func (s *state) cancelChildren(w *waitRec, c *command, why string) {
	reason := core.TruncateError(fmt.Sprintf("waiting job %s cancelled: %s", w.wait.JobID, why))
	for _, id := range w.wait.JobIDs {
		if ch := s.jobs[id]; ch != nil && ch.job.State.Active() {
			s.cancelJob(ch, c, reason)
		}
	}
}
