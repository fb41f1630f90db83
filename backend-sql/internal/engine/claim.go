package engine

import (
	"context"

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

// InsertRuns opens one running run per claimed job with multi-row
// inserts. Run ids come from core.NewID.
func (e *Engine) InsertRuns(ctx context.Context, q Querier, jobs []core.Job, now int64) error {
	const chunk = 500
	for start := 0; start < len(jobs); start += chunk {
		part := jobs[start:min(start+chunk, len(jobs))]
		sql := "INSERT INTO {s}runs (id, job_id, attempt, worker_id, token, status, started_at) VALUES "
		args := make([]any, 0, len(part)*7)
		for i, j := range part {
			if i > 0 {
				sql += ", "
			}
			sql += "(?, ?, ?, ?, ?, 'running', ?)"
			args = append(args, core.NewID(fromUS(now)), j.ID, j.Attempt, j.Lease.WorkerID, j.Lease.Token, now)
		}
		if _, err := q.Exec(ctx, e.render(sql), args...); err != nil {
			return err
		}
	}
	return nil
}

// ClaimSQL is the portable claim used by stores whose write transaction
// already excludes other writers: cancel the due jobs past a deadline,
// then take the first Limit due jobs in claim order and open their runs.
func (e *Engine) ClaimSQL(ctx context.Context, q Querier, req core.ClaimRequest, now int64) ([]core.Job, error) {
	paused, err := e.count(ctx, q, "SELECT count(*) FROM {s}queue_configs WHERE queue = ? AND paused <> 0", req.Queue)
	if err != nil || paused > 0 {
		return nil, err
	}
	if _, err := q.Exec(ctx, e.render(`UPDATE {s}jobs SET state = 'cancelled', finished_at = ?,
		last_error = CASE WHEN first_started_at = 0 THEN '`+ReasonMaxDelay+`' ELSE '`+ReasonMaxDuration+`' END
		WHERE queue = ? AND state IN ('queued', 'sleeping') AND run_at <= ? AND deadline_at IS NOT NULL AND deadline_at <= ?`),
		now, req.Queue, now, now); err != nil {
		return nil, err
	}
	jobs, err := collectJobs(q.Query(ctx, e.render(claimUpdateSQL+"RETURNING "+JobCols("")),
		req.WorkerID, now+ceilUS(req.LeaseTTL), now, now, req.Queue, now, now, req.Limit))
	if err != nil || len(jobs) == 0 {
		return nil, err
	}
	SortClaimOrder(jobs)
	return jobs, e.InsertRuns(ctx, q, jobs, now)
}

// claimUpdateSQL marks the first Limit due jobs of a queue running; its
// arguments are worker, lease expiry, now (twice), queue, now (twice)
// and limit.
const claimUpdateSQL = `UPDATE {s}jobs SET state = 'running',
		attempt = CASE WHEN state = 'sleeping' THEN attempt ELSE attempt + 1 END,
		token = token + 1, worker_id = ?, lease_expires_at = ?,
		first_started_at = CASE WHEN first_started_at = 0 THEN ? ELSE first_started_at END,
		deadline_at = CASE WHEN first_started_at = 0 THEN (CASE WHEN max_duration > 0 THEN ? + (max_duration + 999) / 1000 ELSE NULL END) ELSE deadline_at END
		WHERE id IN (SELECT id FROM {s}jobs WHERE queue = ? AND state IN ('queued', 'sleeping') AND run_at <= ?
			AND (deadline_at IS NULL OR deadline_at > ?) ORDER BY priority, run_at, id LIMIT ?)
		`
