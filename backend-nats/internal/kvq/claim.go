package kvq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Claim implements core.QueueBackend. The namespace's owner picks the jobs
// from its index in (priority, run-at, id) order; each claim is a
// compare-and-set of the job's record at the revision its ready entry
// names, so a job is never handed to two claims, whichever processes ask.
func (b *Backend) Claim(ctx context.Context, req core.ClaimRequest) ([]core.Job, error) {
	if err := b.isClosed(); err != nil {
		return nil, err
	}
	if err := core.ValidateClaim(req, b.opts.Limits); err != nil {
		return nil, err
	}
	rep, err := b.call(ctx, rpcRequest{Claim: &req})
	if err != nil {
		return nil, err
	}
	if rep.Jobs == nil {
		rep.Jobs = []core.Job{}
	}
	return rep.Jobs, nil
}

// take removes up to n due entries of queue from the index, in claim order.
func (o *owner) take(queue string, n int, now time.Time) []*held {
	o.mu.Lock()
	defer o.mu.Unlock()
	tree := o.ready[queue]
	if tree == nil {
		return nil
	}
	nowMicros := now.UnixMicro()
	var keys []readyKey
	pivot := readyKey{prio: core.MinPriority - 1}
	for len(keys) < n {
		var skipTo *readyKey
		tree.AscendGreaterOrEqual(pivot, func(k readyKey) bool {
			if k.runAt > nowMicros {
				skipTo = &readyKey{prio: k.prio + 1, runAt: -1 << 62}
				return false
			}
			keys = append(keys, k)
			return len(keys) < n
		})
		if skipTo == nil {
			break
		}
		pivot = *skipTo
	}
	out := make([]*held, 0, len(keys))
	for _, k := range keys {
		h := o.held[k.id]
		tree.Delete(k)
		delete(o.held, k.id)
		if h != nil {
			out = append(out, h)
		}
	}
	return out
}

// putBack returns entries that a failed claim took to the index.
func (o *owner) putBack(hs []*held) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, h := range hs {
		if cur := o.held[h.rec.Job.ID]; cur != nil && cur.rev >= h.rev {
			continue
		}
		tree := o.ready[h.rec.Job.Queue]
		tree.ReplaceOrInsert(h.key)
		o.held[h.rec.Job.ID] = h
	}
}

// claim claims up to req.Limit due jobs of req.Queue.
func (o *owner) claim(ctx context.Context, req core.ClaimRequest) ([]core.Job, error) {
	b := o.b
	cfg, err := b.GetQueueConfig(ctx, req.Queue)
	if err != nil {
		return nil, err
	}
	out := []core.Job{}
	if cfg.Paused {
		return out, nil
	}
	now := b.now()
	caught := false
	for len(out) < req.Limit {
		hs := o.take(req.Queue, req.Limit-len(out), now)
		if len(hs) == 0 {
			if caught || len(out) > 0 {
				break
			}
			// Nothing due here: make sure no entry is still on its way.
			if err := o.catchUp(ctx); err != nil {
				return out, err
			}
			caught = true
			continue
		}
		jobs, err := o.claimEntries(ctx, hs, req, now)
		out = append(out, jobs...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// claimEntries claims the jobs of hs; jobs whose record moved on since
// their entry are read again and claimed if still due, else dropped.
func (o *owner) claimEntries(ctx context.Context, hs []*held, req core.ClaimRequest, now time.Time) ([]core.Job, error) {
	b := o.b
	type pending struct {
		h   *held
		rec *record
		fut jetstream.PubAckFuture
	}
	var ps []pending
	var jobs []core.Job
	var firstErr error
	// The lease entries go first, so that a claim whose owner dies right
	// after its compare-and-set is still known to the next owner; an entry
	// whose claim then loses is forgotten at the next rescue pass.
	var claimable []*held
	var recs []*record
	var lfuts []jetstream.PubAckFuture
	for _, h := range hs {
		rec := h.rec.clone()
		if _, passed := core.DeadlinePassed(rec.Job, now); passed {
			if err := o.cancelHeld(ctx, h, now); err != nil && firstErr == nil {
				firstErr = err
			}
			continue
		}
		claimRecord(rec, req, now)
		data, _ := json.Marshal(leaseEntry{ID: rec.Job.ID, Token: rec.Job.Lease.Token})
		f, err := b.js.PublishAsync(b.leaseSubj(), data)
		if err != nil {
			o.putBack([]*held{h})
			if firstErr == nil {
				firstErr = fmt.Errorf("natsq: lease entry of %s: %w", rec.Job.ID, err)
			}
			continue
		}
		claimable, recs, lfuts = append(claimable, h), append(recs, rec), append(lfuts, f)
	}
	for i, f := range lfuts {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			o.putBack([]*held{claimable[i]})
			claimable[i] = nil
			if firstErr == nil {
				firstErr = fmt.Errorf("natsq: lease entry: %w", err)
			}
		case <-ctx.Done():
			o.putBack(claimable[i:])
			return nil, fmt.Errorf("natsq: claim: %w", ctx.Err())
		}
	}
	for i, h := range claimable {
		if h == nil {
			continue
		}
		rec := recs[i]
		data, err := json.Marshal(rec)
		if err != nil {
			return nil, fmt.Errorf("natsq: encode job %s: %w", rec.Job.ID, err)
		}
		fut, err := b.js.PublishMsgAsync(&nats.Msg{Subject: b.jobSubj(rec.Job.ID), Data: data},
			jetstream.WithExpectLastSequencePerSubject(h.rev))
		if err != nil {
			o.putBack([]*held{h})
			if firstErr == nil {
				firstErr = fmt.Errorf("natsq: claim %s: %w", rec.Job.ID, err)
			}
			continue
		}
		ps = append(ps, pending{h, rec, fut})
	}
	var retry []*held
	for _, p := range ps {
		select {
		case <-p.fut.Ok():
			o.ack(p.h)
			o.mu.Lock()
			o.leasedLocked(&p.rec.Job)
			o.mu.Unlock()
			jobs = append(jobs, p.rec.Job)
		case err := <-p.fut.Err():
			if isConflict(err) {
				retry = append(retry, p.h)
				continue
			}
			o.putBack([]*held{p.h})
			if firstErr == nil {
				firstErr = fmt.Errorf("natsq: claim %s: %w", p.rec.Job.ID, err)
			}
		case <-ctx.Done():
			if firstErr == nil {
				firstErr = fmt.Errorf("natsq: claim: %w", ctx.Err())
			}
		}
	}
	// The records that moved on: claim them at their current revision
	// when they are still due, drop their entries otherwise.
	for _, h := range retry {
		rec, rev, err := b.loadJob(ctx, h.rec.Job.ID)
		if errors.Is(err, core.ErrNotFound) {
			o.ack(h)
			continue
		}
		if err != nil {
			o.putBack([]*held{h})
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		j := &rec.Job
		if (j.State != core.StateQueued && j.State != core.StateSleeping) || j.Queue != req.Queue || j.RunAt.After(now) {
			o.ack(h)
			continue
		}
		fresh := &held{rec: rec, rev: rev, msg: h.msg, key: readyKey{j.Priority, j.RunAt.UnixMicro(), j.ID}}
		more, err := o.claimEntries(ctx, []*held{fresh}, req, now)
		jobs = append(jobs, more...)
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if firstErr != nil && len(jobs) > 0 {
		// The claimed jobs are the caller's; the error is logged, not lost.
		b.log.Warn("claim partly failed", "queue", req.Queue, "err", firstErr)
		firstErr = nil
	}
	slices.SortStableFunc(jobs, func(a, c core.Job) int {
		return cmpKey(readyKey{a.Priority, a.RunAt.UnixMicro(), a.ID}, readyKey{c.Priority, c.RunAt.UnixMicro(), c.ID})
	})
	return jobs, firstErr
}

func cmpKey(a, b readyKey) int {
	switch {
	case readyLess(a, b):
		return -1
	case readyLess(b, a):
		return 1
	}
	return 0
}

// leasedLocked records the claim of running job j, keeping the delivery of
// its lease entry when the stream delivered it already.
func (o *owner) leasedLocked(j *core.Job) {
	l := o.leases[j.ID]
	if l == nil || l.token != j.Lease.Token {
		if l != nil && l.msg != nil && l.token < j.Lease.Token {
			_ = l.msg.Ack()
		}
		l = &leased{token: j.Lease.Token}
		o.leases[j.ID] = l
	}
	l.queue, l.expires = j.Queue, j.Lease.ExpiresAt
	if d, ok := core.Deadline(*j); ok {
		l.deadline = d
	}
}

// claimRecord moves rec to running under a new lease for req.
func claimRecord(rec *record, req core.ClaimRequest, now time.Time) {
	j := &rec.Job
	if j.State != core.StateSleeping {
		j.Attempt++
	}
	if j.FirstStartedAt.IsZero() {
		j.FirstStartedAt = now
	}
	j.State = core.StateRunning
	j.Lease = core.Lease{JobID: j.ID, WorkerID: req.WorkerID, Token: j.Lease.Token + 1, ExpiresAt: now.Add(req.LeaseTTL)}
	rec.Runs = append(rec.Runs, core.Run{ID: core.RunID(j.ID, j.Lease.Token), JobID: j.ID, Attempt: j.Attempt,
		WorkerID: req.WorkerID, Token: j.Lease.Token, Status: core.RunRunning, StartedAt: now})
}

// cancelHeld cancels the job of entry h, whose deadline passed before a
// claim could hand it out.
func (o *owner) cancelHeld(ctx context.Context, h *held, now time.Time) error {
	b := o.b
	rec, rev := h.rec.clone(), h.rev
	for {
		reason, passed := core.DeadlinePassed(rec.Job, now)
		if !passed || rec.Job.State.Terminal() || rec.Job.State == core.StateRunning {
			o.ack(h)
			return nil
		}
		cancelRecord(rec, now, reason)
		_, err := b.storeJob(ctx, rec, rev)
		if err == nil {
			o.ack(h)
			b.signal(rec.Job.Queue)
			return nil
		}
		if !errors.Is(err, errConflict) {
			o.putBack([]*held{h})
			return err
		}
		if rec, rev, err = b.loadJob(ctx, h.rec.Job.ID); err != nil {
			o.ack(h)
			return nil
		}
	}
}

// cancelRecord moves an active job to cancelled.
func cancelRecord(rec *record, now time.Time, reason string) {
	if rec.Job.State == core.StateRunning {
		rec.closeRun(core.RunCancelled, now, reason)
	}
	rec.Job.State = core.StateCancelled
	rec.Job.FinishedAt = now
	rec.Job.LastError = reason
}
