package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/boson-go/boson/core"
)

// Heartbeat implements core.QueueBackend.
func (e *Engine) Heartbeat(ctx context.Context, lease core.Lease, ttl time.Duration) (core.Lease, error) {
	if err := e.check("heartbeat"); err != nil {
		return core.Lease{}, err
	}
	if err := core.ValidateLease(lease); err != nil {
		return core.Lease{}, err
	}
	if ttl <= 0 {
		return core.Lease{}, fmt.Errorf("%w: ttl: %v must be positive", core.ErrInvalidArgument, ttl)
	}
	// Fast path: one statement extends a lease that is held and within
	// its deadline. Anything else takes the careful path below.
	var out core.Lease
	extended := false
	err := e.st.WriteOne(ctx, func(q Querier) error {
		rows, err := q.Query(ctx, e.render(`UPDATE {s}jobs SET lease_expires_at = {now} + ?
			WHERE id = ? AND state = 'running' AND token = ? AND (deadline_at IS NULL OR deadline_at > {now})
			RETURNING worker_id, lease_expires_at`), e.NowArg(), ceilUS(ttl), lease.JobID, lease.Token, e.NowArg())
		if err != nil {
			return err
		}
		defer rows.Close()
		if rows.Next() {
			var exp int64
			if err := rows.Scan(&out.WorkerID, &exp); err != nil {
				return err
			}
			out.JobID, out.Token, out.ExpiresAt = lease.JobID, lease.Token, fromUS(exp)
			extended = true
		}
		return rows.Err()
	})
	if err != nil {
		return core.Lease{}, e.wrap("heartbeat", err)
	}
	if extended {
		return out, nil
	}
	var cancelled string
	var queue string
	err = e.st.WriteTx(ctx, func(q Querier) error {
		cancelled = ""
		j, now, err := e.lockFenced(ctx, q, lease)
		if err != nil {
			return err
		}
		if reason, passed := core.DeadlinePassed(j, fromUS(now)); passed {
			if _, err := e.cancelJob(ctx, q, j, now, reason); err != nil {
				return err
			}
			cancelled, queue = reason, j.Queue
			return e.d.Notify(ctx, e, q, []string{j.Queue})
		}
		exp := now + ceilUS(ttl)
		if _, err := q.Exec(ctx, e.render("UPDATE {s}jobs SET lease_expires_at = ? WHERE id = ?"), exp, j.ID); err != nil {
			return err
		}
		out = j.Lease
		out.ExpiresAt = fromUS(exp)
		return nil
	})
	if err != nil {
		return core.Lease{}, e.wrap("heartbeat", err)
	}
	if cancelled != "" {
		e.hub.signal(queue)
		return core.Lease{}, e.wrap("heartbeat", fmt.Errorf("%w: job %s was cancelled: %s", core.ErrLeaseLost, lease.JobID, cancelled))
	}
	return out, nil
}
