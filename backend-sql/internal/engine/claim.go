package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/boson-go/boson/core"
)

// Claim implements core.QueueBackend through the dialect's claim step.
func (e *Engine) Claim(ctx context.Context, req core.ClaimRequest) ([]core.Job, error) {
	if err := e.check("claim"); err != nil {
		return nil, err
	}
	if err := core.ValidateClaim(req, e.limits); err != nil {
		return nil, err
	}
	jobs, err := e.d.Claim(ctx, e, req, e.NowArg())
	if err != nil {
		return nil, e.wrap("claim", err)
	}
	SortClaimOrder(jobs)
	return jobs, nil
}

// ClaimSQL is the portable claim used by stores whose write transaction
// already excludes other writers. With expired set (the caller saw due
// jobs past a cancellation deadline) it first cancels those; then it
// picks the first Limit due jobs in claim order and marks them running,
// each with a new run id. A paused queue yields nothing. The run row
// itself is written when the attempt ends.
func (e *Engine) ClaimSQL(ctx context.Context, q Querier, req core.ClaimRequest, now int64, expired bool) ([]core.Job, error) {
	if expired {
		if err := e.expireAwaited(ctx, q, req.Queue, now, func() ([]string, error) {
			var ids []string
			err := e.scanAll(ctx, q, claimExpireSQL+" RETURNING id", []any{now, req.Queue, now, now, req.Queue}, func(rows Rows) error {
				var id string
				err := rows.Scan(&id)
				ids = append(ids, id)
				return err
			})
			return ids, err
		}); err != nil {
			return nil, err
		}
	}
	jobs, err := collectJobs(q.Query(ctx, e.render(claimPickSQL), req.Queue, now, now, req.Queue, req.Limit))
	if err != nil || len(jobs) == 0 {
		return nil, err
	}
	// The pick read the rows; the update below changes them as written
	// here, so the claim returns them without an UPDATE ... RETURNING
	// (whose buffering cost SQLite more than this).
	pairs := make([][2]string, len(jobs))
	expires := now + ceilUS(req.LeaseTTL)
	for i := range jobs {
		j := &jobs[i]
		if j.State != core.StateSleeping {
			j.Attempt++
		}
		j.State = core.StateRunning
		j.Lease = core.Lease{JobID: j.ID, WorkerID: req.WorkerID, Token: j.Lease.Token + 1, ExpiresAt: fromUS(expires)}
		pairs[i] = [2]string{j.ID, core.RunID(j.ID, j.Lease.Token)}
		if j.FirstStartedAt.IsZero() {
			j.FirstStartedAt = fromUS(now)
		}
	}
	picked, err := json.Marshal(pairs)
	if err != nil {
		return nil, err
	}
	n, err := q.Exec(ctx, e.render(claimUpdateSQL), req.WorkerID, expires, now, now, now, string(picked))
	if err != nil {
		return nil, err
	}
	if n != int64(len(jobs)) {
		return nil, fmt.Errorf("claim updated %d of %d picked jobs", n, len(jobs))
	}
	return jobs, nil
}

// expireAwaited runs expire, which cancels the due jobs of queue past a
// cancellation deadline and returns their ids, as a cancellation: it
// counts them on their waiters' rows and cancels the jobs awaited by
// those of them that were waiting with CancelChildren.
func (e *Engine) expireAwaited(ctx context.Context, q Querier, queue string, now int64, expire func() ([]string, error)) error {
	// The waits are read before the jobs are cancelled, and kept for the
	// jobs the expiry did cancel (Postgres skips rows others hold).
	// The state term repeats what ccWaits asks (sleeping) in the words
	// of the partial index jobs_claim_deadline, so that SQLite reads that
	// index rather than every job of the queue.
	waits, err := e.ccWaits(ctx, q, "j.queue = ? AND j.state IN ('queued', 'sleeping') AND j.run_at <= ? AND j.deadline_at IS NOT NULL AND j.deadline_at <= ?",
		[]any{queue, now, now})
	if err != nil {
		return err
	}
	ids, err := expire()
	if err != nil {
		return err
	}
	if err := e.countAwaited(ctx, q, ids, now, false); err != nil {
		return err
	}
	if len(waits) == 0 {
		return nil
	}
	expired := make(map[string]bool, len(ids))
	for _, id := range ids {
		expired[id] = true
	}
	return e.cancelChildren(ctx, q, childrenOf(waits, expired), now)
}

// claimExpireSQL cancels the due jobs of a queue that are past their
// cancellation deadline (SQLite syntax), unless the queue is paused; its arguments are
// now, queue, now (twice) and queue.
const claimExpireSQL = `UPDATE {s}jobs INDEXED BY jobs_claim_deadline SET state = 'cancelled', finished_at = ?,
		last_error = CASE WHEN first_started_at = 0 THEN '` + ReasonMaxDelay + `' ELSE '` + ReasonMaxDuration + `' END
		WHERE queue = ? AND state IN ('queued', 'sleeping') AND run_at <= ? AND deadline_at IS NOT NULL AND deadline_at <= ?
			AND NOT EXISTS (SELECT 1 FROM {s}queue_configs WHERE queue = ? AND paused <> 0)`

// claimPickSQL reads the first Limit due jobs of a queue in claim order
// from the claim index (SQLite syntax: INDEXED BY makes any other plan an
// error), nothing when the queue is paused;
// its arguments are queue, now (twice), queue and limit.
var claimPickSQL = `SELECT ` + JobCols("") + ` FROM {s}jobs INDEXED BY jobs_claim WHERE queue = ? AND state IN ('queued', 'sleeping') AND seq_gate = 0 AND key_gate = 0 AND run_at <= ?
		AND (deadline_at IS NULL OR deadline_at > ?)
		AND NOT EXISTS (SELECT 1 FROM {s}queue_configs WHERE queue = ? AND paused <> 0)
		ORDER BY priority, run_at, id LIMIT ?`

// claimUpdateSQL marks picked jobs running (as ClaimSQL mirrors in Go);
// its arguments are worker, lease expiry, now (three times) and a JSON
// array of [job id, run id] pairs.
const claimUpdateSQL = `UPDATE {s}jobs SET state = 'running',
		attempt = CASE WHEN state = 'sleeping' THEN attempt ELSE attempt + 1 END,
		token = token + 1, worker_id = ?, lease_expires_at = ?,
		first_started_at = CASE WHEN first_started_at = 0 THEN ? ELSE first_started_at END,
		deadline_at = CASE WHEN first_started_at = 0 THEN (CASE WHEN max_duration > 0 THEN ? + (max_duration + 999) / 1000 ELSE NULL END) ELSE deadline_at END,
		started_at = ?, run_id = p.run_id
		FROM (SELECT value ->> 0 AS job_id, value ->> 1 AS run_id FROM json_each(?)) AS p
		WHERE {s}jobs.id = p.job_id
		`
