package engine

import (
	"context"
	"encoding/json"

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
		if _, err := q.Exec(ctx, e.render(claimExpireSQL), now, req.Queue, now, now, req.Queue); err != nil {
			return nil, err
		}
	}
	var pairs [][2]string
	err := e.scanAll(ctx, q, claimPickSQL, []any{req.Queue, now, now, req.Queue, req.Limit}, func(rows Rows) error {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		pairs = append(pairs, [2]string{id, core.NewID(fromUS(now))})
		return nil
	})
	if err != nil || len(pairs) == 0 {
		return nil, err
	}
	picked, err := json.Marshal(pairs)
	if err != nil {
		return nil, err
	}
	return collectJobs(q.Query(ctx, e.render(claimUpdateSQL+"RETURNING "+JobCols("")),
		req.WorkerID, now+ceilUS(req.LeaseTTL), now, now, now, string(picked)))
}

// claimExpireSQL cancels the due jobs of a queue that are past their
// cancellation deadline, unless the queue is paused; its arguments are
// now, queue, now (twice) and queue.
const claimExpireSQL = `UPDATE {s}jobs SET state = 'cancelled', finished_at = ?,
		last_error = CASE WHEN first_started_at = 0 THEN '` + ReasonMaxDelay + `' ELSE '` + ReasonMaxDuration + `' END
		WHERE queue = ? AND state IN ('queued', 'sleeping') AND run_at <= ? AND deadline_at IS NOT NULL AND deadline_at <= ?
			AND NOT EXISTS (SELECT 1 FROM {s}queue_configs WHERE queue = ? AND paused <> 0)`

// claimPickSQL reads the ids of the first Limit due jobs of a queue in
// claim order from the claim index, nothing when the queue is paused;
// its arguments are queue, now (twice), queue and limit.
const claimPickSQL = `SELECT id FROM {s}jobs WHERE queue = ? AND state IN ('queued', 'sleeping') AND run_at <= ?
		AND (deadline_at IS NULL OR deadline_at > ?)
		AND NOT EXISTS (SELECT 1 FROM {s}queue_configs WHERE queue = ? AND paused <> 0)
		ORDER BY priority, run_at, id LIMIT ?`

// claimUpdateSQL marks picked jobs running; its arguments are worker,
// lease expiry, now (three times) and a JSON array of [job id, run id]
// pairs.
const claimUpdateSQL = `UPDATE {s}jobs SET state = 'running',
		attempt = CASE WHEN state = 'sleeping' THEN attempt ELSE attempt + 1 END,
		token = token + 1, worker_id = ?, lease_expires_at = ?,
		first_started_at = CASE WHEN first_started_at = 0 THEN ? ELSE first_started_at END,
		deadline_at = CASE WHEN first_started_at = 0 THEN (CASE WHEN max_duration > 0 THEN ? + (max_duration + 999) / 1000 ELSE NULL END) ELSE deadline_at END,
		started_at = ?, run_id = p.run_id
		FROM (SELECT value ->> 0 AS job_id, value ->> 1 AS run_id FROM json_each(?)) AS p
		WHERE {s}jobs.id = p.job_id
		`
