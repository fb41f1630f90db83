package engine

import (
	"context"
	"fmt"

	"github.com/boson-go/boson/core"
)

// deleteJobs deletes the jobs ids, which the transaction q holds for
// change, with every row that belongs to them: their finished runs and
// their checkpoints. A job's open run and its idempotency key live in
// the job row, so they go with it. It returns the number of jobs deleted.
func (e *Engine) deleteJobs(ctx context.Context, q Querier, ids []string) (int, error) {
	if err := e.flowAfterIDs(ctx, q, ids); err != nil {
		return 0, err
	}
	if err := e.countAwaited(ctx, q, ids, 0, true); err != nil {
		return 0, err
	}
	cond, arg := e.inStrings("job_id", ids)
	for _, table := range []string{"runs", "checkpoints", "job_waits"} {
		if _, err := q.Exec(ctx, e.render("DELETE FROM {s}"+table+" WHERE "+cond), arg); err != nil {
			return 0, err
		}
	}
	cond, arg = e.inStrings("id", ids)
	n, err := q.Exec(ctx, e.render("DELETE FROM {s}jobs WHERE "+cond), arg)
	return int(n), err
}

// DeleteJob implements core.JobDeleter in one write transaction that
// holds the job row. A worker's lease on a deleted job names a job that
// no longer exists, so each of its fenced calls fails with
// core.ErrLeaseLost, as when another claim superseded it.
func (e *Engine) DeleteJob(ctx context.Context, jobID string, force bool) error {
	if err := e.check("delete job"); err != nil {
		return err
	}
	if err := core.ValidateJobID(jobID); err != nil {
		return err
	}
	if !plausibleID(jobID) {
		return fmt.Errorf("boson/%s: delete job: %w: job %q", e.d.Name(), core.ErrNotFound, jobID)
	}
	err := e.st.WriteTx(ctx, func(q Querier) error {
		j, _, found, err := e.lockJob(ctx, q, jobID)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: job %s", core.ErrNotFound, jobID)
		}
		if j.State == core.StateRunning && !force {
			return fmt.Errorf("%w: job %s is running; delete it with force to supersede its lease", core.ErrInvalidState, jobID)
		}
		_, err = e.deleteJobs(ctx, q, []string{jobID})
		return err
	})
	return e.wrap("delete job", err)
}

// DeleteQueue implements core.JobDeleter: one write transaction deletes
// the first req.Limit jobs of the queue in id order (walking jobs_queue),
// skipping rows another transaction holds, and the queue's config once no
// job of the queue is left.
func (e *Engine) DeleteQueue(ctx context.Context, req core.DeleteQueueRequest) (core.DeleteQueueResult, error) {
	if err := e.check("delete queue"); err != nil {
		return core.DeleteQueueResult{}, err
	}
	if err := core.ValidateDeleteQueue(req, e.limits); err != nil {
		return core.DeleteQueueResult{}, err
	}
	var res core.DeleteQueueResult
	err := e.st.WriteTx(ctx, func(q Querier) error {
		res = core.DeleteQueueResult{}
		var ids []string
		if err := e.scanAll(ctx, q, "SELECT id FROM {s}jobs WHERE queue = ? ORDER BY id LIMIT ?"+e.d.SkipLocked(),
			[]any{req.Queue, req.Limit}, func(rows Rows) error {
				var id string
				err := rows.Scan(&id)
				ids = append(ids, id)
				return err
			}); err != nil {
			return err
		}
		if len(ids) > 0 {
			n, err := e.deleteJobs(ctx, q, ids)
			if err != nil {
				return err
			}
			res.Deleted = n
		}
		if len(ids) == req.Limit {
			return nil // more may be left; the next step tells
		}
		left, err := e.count(ctx, q, "SELECT count(*) FROM (SELECT 1 FROM {s}jobs WHERE queue = ? LIMIT 1) AS x", req.Queue)
		if err != nil || left > 0 {
			return err
		}
		if _, err := q.Exec(ctx, e.render("DELETE FROM {s}queue_configs WHERE queue = ?"), req.Queue); err != nil {
			return err
		}
		res.Done = true
		return nil
	})
	if err != nil {
		return core.DeleteQueueResult{}, e.wrap("delete queue", err)
	}
	return res, nil
}
