package mem

import (
	"context"
	"log/slog"

	"github.com/boson-go/boson/core"
)

// leaseExpired is the LastError of a job failed by Rescue and the error of
// every run Rescue ends as lost.
const leaseExpired = "lease expired"

// Rescue runs one bounded pass over the two heaps that hold its work, and
// changes at most req.Limit jobs:
//
//  1. Active jobs whose cancellation deadline has passed are cancelled
//     (a running job's run ends as cancelled).
//  2. Running jobs whose lease expired are queued again, due now, when
//     attempts remain, and failed with "lease expired" otherwise; their
//     runs end as lost.
//
// Cancellation goes first, so a job that both overran its deadline and lost
// its worker ends cancelled, not retried. Cost: O(k log n) for k changes.
// Concurrent passes are serialised by the lock and never change a job twice.
func (b *Backend) Rescue(ctx context.Context, req core.RescueRequest) (core.RescueResult, error) {
	if err := b.usable(ctx); err != nil {
		return core.RescueResult{}, err
	}
	var res core.RescueResult
	if err := b.limits.ValidateBatch("limit", req.Limit); err != nil {
		return res, err
	}
	if err := b.lock(ctx); err != nil {
		return res, err
	}
	defer b.mu.Unlock()
	s := b.s
	now := b.now()

	for res.Total() < req.Limit {
		r := s.deadlines.peek()
		if r == nil || r.deadline.After(now) {
			break
		}
		reason, _ := core.DeadlinePassed(r.job, now)
		s.cancel(r, reason, now) // removes r from the deadline heap
		res.Cancelled++
	}
	for res.Total() < req.Limit {
		r := s.leases.peek()
		if r == nil || r.job.Lease.ExpiresAt.After(now) {
			break
		}
		if r.job.Attempt >= r.job.MaxAttempts {
			s.finish(r, core.StateFailed, core.RunLost, leaseExpired, now)
			res.Failed++
			continue
		}
		s.detach(r, now)
		s.endRun(r, core.RunLost, leaseExpired, now)
		r.job.State = core.StateQueued
		r.job.RunAt = now
		s.attach(r, core.StateRunning, now)
		res.Requeued++
	}
	if res.Total() > 0 {
		b.log.LogAttrs(ctx, slog.LevelDebug, "mem: rescue pass",
			slog.Int("requeued", res.Requeued), slog.Int("failed", res.Failed), slog.Int("cancelled", res.Cancelled))
	}
	return res, nil
}
