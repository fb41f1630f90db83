package mem

import (
	"context"
	"time"

	"github.com/boson-go/boson/core"
)

// Claim takes up to req.Limit due jobs of req.Queue in (priority, run-at,
// id) order and marks them running under fresh leases, all under one lock
// acquisition, so no job is ever handed to two claims.
//
// Due jobs past a cancellation deadline are cancelled on the way and do not
// count toward the limit. The flow rules (flow.go) hold jobs back out of
// the ready index; the few that a rule holds back by the time they are
// taken (a slot taken from another queue, a config changed) go back where
// they wait, and the claim goes on with the next job. Cost: O((k + m + c) log n) for k claimed jobs, m
// jobs that became due since the last claim and c cancelled ones; never a
// scan of the queue.
func (b *Backend) Claim(ctx context.Context, req core.ClaimRequest) ([]core.Job, error) {
	if err := b.usable(ctx); err != nil {
		return nil, err
	}
	if err := core.ValidateClaim(req, b.limits); err != nil {
		return nil, err
	}
	if err := b.lock(ctx); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	s := b.s
	now := b.now()

	qcfg := s.queueConfigs[req.Queue]
	if qcfg.Paused {
		return nil, nil
	}
	q, ok := s.queues[req.Queue]
	if !ok {
		return nil, nil
	}
	s.holdSignals()
	defer s.releaseSignals()
	s.promoteDue(q, now)
	s.wakeRates(q, now)

	got := s.claimed[:0]
	size := 0
	for len(got) < req.Limit {
		if qcfg.MaxRunning > 0 && q.counts.get(core.StateRunning) >= int64(qcfg.MaxRunning) {
			break
		}
		r := q.ready.pop()
		if r == nil {
			break
		}
		if r.job.RunAt.After(now) {
			// Only when the clock moved back: the job is no longer due.
			s.dropTokens(r, stageKey, true, now)
			s.fileScheduled(r)
			continue
		}
		if reason, passed := deadlinePassed(&r.job, now); passed {
			s.cancel(r, reason, now)
			continue
		}
		if (r.fl != nil || r.t.flow.taskGated()) && !s.claimable(r, now) {
			continue // held back by a flow rule, and filed where it waits
		}
		s.claimOne(r, req, now)
		got = append(got, r)
		size += len(r.job.Payload)
	}
	if len(got) == 0 {
		return nil, nil
	}
	out := make([]core.Job, len(got))
	arena := make([]byte, 0, size)
	for i, r := range got {
		out[i] = r.job
		copyOut(&out[i], &arena)
	}
	clear(got)
	s.claimed = got[:0]
	return out, nil
}

// promoteDue moves the jobs of q whose RunAt has come from the scheduled
// heap to the ready heap. The clock may jump by any amount between calls,
// so this runs at claim time rather than from a timer.
func (s *store) promoteDue(q *queueState, now time.Time) {
	for r := q.scheduled.peek(); r != nil && !r.job.RunAt.After(now); r = q.scheduled.peek() {
		q.scheduled.pop()
		if r.fl == nil && !r.t.flow.taskGated() {
			q.ready.add(r)
		} else {
			s.route(r, stageSeq, now)
		}
	}
}

// claimOne marks a due job running under a new lease for req.WorkerID and
// opens its run. A job woken from a sleep keeps its attempt number.
func (s *store) claimOne(r *jobRec, req core.ClaimRequest, now time.Time) {
	old := r.job.State
	if r.fl != nil {
		// The job takes the slot its tokens stood for.
		s.dropTokens(r, stageKey, false, now)
	}
	s.detach(r, now)
	j := &r.job
	if old != core.StateSleeping {
		j.Attempt++
	}
	if j.FirstStartedAt.IsZero() {
		j.FirstStartedAt = now // the deadline moves from MaxDelay to MaxDuration
	}
	j.State = core.StateRunning
	j.Lease = core.Lease{
		JobID:     j.ID,
		WorkerID:  req.WorkerID,
		Token:     j.Lease.Token + 1,
		ExpiresAt: now.Add(req.LeaseTTL),
	}
	s.openRun(r, now)
	r.t.starts.add(now)
	if r.fl != nil && r.fl.key != nil {
		r.fl.key.starts.add(now)
	}
	s.attach(r, old, now)
}
