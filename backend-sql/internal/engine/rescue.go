package engine

import (
	"context"
	"slices"

	"github.com/boson-go/boson/core"
)

// Rescue implements core.QueueBackend: one bounded pass that first
// cancels jobs past a cancellation deadline, then requeues or fails
// running jobs whose lease expired. Rows other passes hold are skipped.
func (e *Engine) Rescue(ctx context.Context, req core.RescueRequest) (core.RescueResult, error) {
	if err := e.check("rescue"); err != nil {
		return core.RescueResult{}, err
	}
	if err := e.limits.ValidateBatch("limit", req.Limit); err != nil {
		return core.RescueResult{}, err
	}
	var res core.RescueResult
	var queues []string
	var requeued []dueJob
	err := e.st.WriteTx(ctx, func(q Querier) error {
		res, queues, requeued = core.RescueResult{}, nil, nil
		seen := map[string]bool{}
		touch := func(queue string) {
			if !seen[queue] {
				seen[queue] = true
				queues = append(queues, queue)
			}
		}
		now, err := e.now(ctx, q)
		if err != nil {
			return err
		}
		late, err := collectJobs(q.Query(ctx, e.render("SELECT "+JobCols("")+` FROM {s}jobs
			WHERE state IN ('queued', 'running', 'sleeping') AND deadline_at IS NOT NULL AND deadline_at <= ?
			ORDER BY deadline_at, id LIMIT ?`+e.d.SkipLocked()), now, req.Limit))
		if err != nil {
			return err
		}
		for _, j := range late {
			reason, passed := core.DeadlinePassed(j, fromUS(now))
			if !passed {
				continue
			}
			if _, err := e.cancelJob(ctx, q, j, now, reason); err != nil {
				return err
			}
			res.Cancelled++
			touch(j.Queue)
		}
		left := req.Limit - res.Cancelled
		if left <= 0 {
			return nil
		}
		expired, err := collectJobs(q.Query(ctx, e.render("SELECT "+JobCols("")+` FROM {s}jobs
			WHERE state = 'running' AND lease_expires_at <= ?
			ORDER BY lease_expires_at, id LIMIT ?`+e.d.SkipLocked()), now, left))
		if err != nil {
			return err
		}
		for _, j := range expired {
			if err := e.endRun(ctx, q, j, core.RunLost, now, "lease expired"); err != nil {
				return err
			}
			if j.Attempt >= j.MaxAttempts {
				_, err = q.Exec(ctx, e.render("UPDATE {s}jobs SET state = 'failed', finished_at = ?, last_error = 'lease expired' WHERE id = ?"), now, j.ID)
				if err == nil {
					err = e.countAwaited(ctx, q, []string{j.ID}, now, false)
				}
				res.Failed++
			} else {
				_, err = q.Exec(ctx, e.render("UPDATE {s}jobs SET state = 'queued', run_at = ? WHERE id = ?"), now, j.ID)
				res.Requeued++
				requeued = append(requeued, dueJob{queue: j.Queue, prio: j.Priority, runAt: now})
			}
			if err != nil {
				return err
			}
			if err := e.flowAfter(ctx, q, []flowRef{refOf(j)}); err != nil {
				return err
			}
			touch(j.Queue)
		}
		if len(queues) > 0 {
			payloads := slices.Clone(queues)
			for _, d := range requeued {
				payloads = append(payloads, d.payload())
			}
			return e.d.Notify(ctx, e, q, payloads)
		}
		return nil
	})
	if err != nil {
		return core.RescueResult{}, e.wrap("rescue", err)
	}
	for _, d := range requeued {
		e.cursors.noteDue(d)
	}
	for _, name := range queues {
		e.hub.signal(name)
	}
	e.keepStats(ctx)
	return res, nil
}
