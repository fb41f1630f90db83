package kvq

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go/jetstream"
)

// Rescue implements core.QueueBackend. The namespace's owner runs the pass:
// it knows every claim (from the lease entries) and every ready job with a
// deadline, and reads a claimed job's record only once its lease may have
// expired by the server's time.
func (b *Backend) Rescue(ctx context.Context, req core.RescueRequest) (core.RescueResult, error) {
	if err := b.isClosed(); err != nil {
		return core.RescueResult{}, err
	}
	if err := b.opts.Limits.ValidateBatch("limit", req.Limit); err != nil {
		return core.RescueResult{}, err
	}
	rep, err := b.call(ctx, rpcRequest{Rescue: &req})
	return rep.Rescue, err
}

type rescueCand struct {
	id    string
	token int64 // 0: a ready job past a deadline
	at    time.Time
}

func (o *owner) rescue(ctx context.Context, req core.RescueRequest) (core.RescueResult, error) {
	b := o.b
	now := b.now()
	var cands []rescueCand
	o.mu.Lock()
	for id, l := range o.leases {
		if l.done {
			continue
		}
		switch {
		case l.expires.IsZero() || !l.expires.After(now):
			cands = append(cands, rescueCand{id, l.token, l.expires})
		case !l.deadline.IsZero() && !now.Before(l.deadline):
			cands = append(cands, rescueCand{id, l.token, l.deadline})
		}
	}
	for id, h := range o.held {
		if d, ok := core.Deadline(h.rec.Job); ok && !now.Before(d) {
			cands = append(cands, rescueCand{id, 0, d})
		}
	}
	o.mu.Unlock()
	sort.Slice(cands, func(i, j int) bool {
		if !cands[i].at.Equal(cands[j].at) {
			return cands[i].at.Before(cands[j].at)
		}
		return cands[i].id < cands[j].id
	})
	var res core.RescueResult
	for _, c := range cands {
		if res.Total() >= req.Limit {
			break
		}
		if err := o.rescueOne(ctx, c, now, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// rescueOne rescues or cancels one candidate, reading its record first.
func (o *owner) rescueOne(ctx context.Context, c rescueCand, now time.Time, res *core.RescueResult) error {
	b := o.b
	var outcome string
	var leaseToken int64
	r, rev, err := b.change(ctx, c.id, func(r *record) (bool, error) {
		outcome = ""
		j := &r.Job
		if c.token != 0 && (j.State != core.StateRunning || j.Lease.Token != c.token) {
			return false, nil // the claim ended; forget it below
		}
		if c.token == 0 && j.State != core.StateQueued && j.State != core.StateSleeping {
			return false, nil
		}
		if reason, passed := core.DeadlinePassed(*j, now); passed {
			leaseToken = j.Lease.Token
			cancelRecord(r, now, reason)
			outcome = "cancelled"
			return true, nil
		}
		if c.token == 0 || j.Lease.ExpiresAt.After(now) {
			return false, nil
		}
		leaseToken = j.Lease.Token
		r.closeRun(core.RunLost, now, "lease expired")
		if j.Attempt >= j.MaxAttempts {
			j.State = core.StateFailed
			j.FinishedAt = now
			j.LastError = "lease expired"
			outcome = "failed"
		} else {
			j.State = core.StateQueued
			j.RunAt = now
			outcome = "requeued"
		}
		return true, nil
	})
	if errors.Is(err, core.ErrNotFound) {
		o.forget(c)
		return nil
	}
	if err != nil {
		return err
	}
	if outcome == "" {
		o.mu.Lock()
		if l := o.leases[c.id]; c.token != 0 && l != nil && l.token == c.token {
			if r.Job.State == core.StateRunning && r.Job.Lease.Token == c.token {
				l.expires = r.Job.Lease.ExpiresAt
			} else {
				o.leftClaimLocked(c.id, c.token)
			}
		}
		o.mu.Unlock()
		return nil
	}
	switch outcome {
	case "cancelled":
		res.Cancelled++
	case "failed":
		res.Failed++
	case "requeued":
		res.Requeued++
		if err := b.publishReady(ctx, r, rev); err != nil {
			return err
		}
	}
	o.mu.Lock()
	if leaseToken != 0 {
		o.leftClaimLocked(c.id, leaseToken)
	}
	if h := o.held[c.id]; h != nil && outcome == "cancelled" {
		o.unholdLocked(h)
		o.ackLocked(h)
	}
	o.mu.Unlock()
	b.signal(r.Job.Queue)
	return nil
}

func (o *owner) forget(c rescueCand) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c.token != 0 {
		o.leftClaimLocked(c.id, c.token)
	} else if h := o.held[c.id]; h != nil {
		o.unholdLocked(h)
		o.ackLocked(h)
	}
}

// sweep repairs what a process that died between two writes left behind:
// it completes every enqueue intent older than keyWait, and gives every
// queued or sleeping job without a ready entry an entry, and every running
// job without a lease entry a lease entry. It reads every job record.
func (o *owner) sweep(ctx context.Context) error {
	b := o.b
	if err := o.sweepIntents(ctx); err != nil {
		return err
	}
	return b.scanJobs(ctx, func(r *record) error {
		j := &r.Job
		if !j.State.Active() {
			return nil
		}
		o.mu.Lock()
		h, l := o.held[j.ID], o.leases[j.ID]
		o.mu.Unlock()
		switch {
		case j.State == core.StateQueued || j.State == core.StateSleeping:
			cur, rev, err := b.loadJob(ctx, j.ID)
			if err != nil || h != nil && h.rev >= rev || cur.Job.State != j.State {
				return nil
			}
			b.log.Warn("a queued job had no ready entry", "job", j.ID)
			return b.publishReady(ctx, cur, rev)
		case j.State == core.StateRunning && (l == nil || l.token < j.Lease.Token):
			data, _ := json.Marshal(leaseEntry{ID: j.ID, Token: j.Lease.Token})
			if _, err := b.js.Publish(ctx, b.leaseSubj(), data); err != nil {
				return err
			}
			o.mu.Lock()
			o.leasedLocked(j)
			o.mu.Unlock()
		}
		return nil
	})
}

// sweepIntents completes the enqueue batches whose writer stopped half
// way: every intent older than keyWait is materialized and deleted.
func (o *owner) sweepIntents(ctx context.Context) error {
	b := o.b
	info, err := b.kv.Info(ctx, jetstream.WithSubjectFilter("bk."+b.ns+".b.*"))
	if err != nil {
		return err
	}
	for subj := range info.State.Subjects {
		batch := subj[strings.LastIndexByte(subj, '.')+1:]
		m, err := b.getMsg(ctx, subj)
		if err != nil || b.now().Before(m.Time.Add(keyWait)) {
			continue
		}
		jobs, err := b.readIntent(ctx, batch)
		if err != nil {
			return err
		}
		b.log.Warn("completing an enqueue batch its writer left half way", "batch", batch, "jobs", len(jobs))
		if err := b.materialize(ctx, jobs); err != nil {
			return err
		}
		if err := b.dropIntent(ctx, batch); err != nil {
			return err
		}
	}
	return nil
}
