package engine

import (
	"context"
	"fmt"

	"github.com/boson-go/boson/core"
)

// lockJob reads one job for change, together with the decision time.
func (e *Engine) lockJob(ctx context.Context, q Querier, id string) (core.Job, int64, bool, error) {
	rows, err := q.Query(ctx, e.render("SELECT {now}, "+JobCols("")+" FROM {s}jobs WHERE id = ?"+e.d.LockRows()), e.NowArg(), id)
	if err != nil {
		return core.Job{}, 0, false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return core.Job{}, 0, false, rows.Err()
	}
	var now int64
	j, err := ScanJob(rows, &now)
	if err != nil {
		return core.Job{}, 0, false, err
	}
	return j, now, true, rows.Err()
}

// lockFenced reads the job of lease for change and checks the fence.
func (e *Engine) lockFenced(ctx context.Context, q Querier, lease core.Lease) (core.Job, int64, error) {
	j, now, found, err := e.lockJob(ctx, q, lease.JobID)
	if err != nil {
		return j, now, err
	}
	if !found {
		return j, now, fmt.Errorf("%w: job %s does not exist", core.ErrLeaseLost, lease.JobID)
	}
	if j.State != core.StateRunning || j.Lease.Token != lease.Token {
		return j, now, fmt.Errorf("%w: job %s is %s under token %d, not running under token %d",
			core.ErrLeaseLost, j.ID, j.State, j.Lease.Token, lease.Token)
	}
	return j, now, nil
}

// endRun writes the finished run of j's current attempt, read from the
// job row while it is still running under j's token.
func (e *Engine) endRun(ctx context.Context, q Querier, j core.Job, status core.RunStatus, now int64, msg string) error {
	_, err := q.Exec(ctx, e.render(`INSERT INTO {s}runs (job_id, token, id, attempt, worker_id, status, started_at, finished_at, error)
		SELECT id, token, run_id, attempt, worker_id, ?, started_at, ?, ? FROM {s}jobs WHERE id = ? AND token = ? AND state = 'running'`),
		string(status), now, msg, j.ID, j.Lease.Token)
	return err
}

// cancelJob cancels j at now with reason and returns the stored job. It
// counts j on its waiters' rows and, when j is waiting with
// CancelChildren, cancels the jobs it awaits.
func (e *Engine) cancelJob(ctx context.Context, q Querier, j core.Job, now int64, reason string) (core.Job, error) {
	var children []string
	if j.State == core.StateSleeping {
		var err error
		if children, err = e.ccChildren(ctx, q, "j.id = ?", []any{j.ID}); err != nil {
			return j, err
		}
	}
	if j.State == core.StateRunning {
		if err := e.endRun(ctx, q, j, core.RunCancelled, now, reason); err != nil {
			return j, err
		}
	}
	jobs, err := collectJobs(q.Query(ctx, e.render("UPDATE {s}jobs SET state = 'cancelled', finished_at = ?, last_error = ? WHERE id = ? RETURNING "+JobCols("")),
		now, reason, j.ID))
	if err != nil {
		return j, err
	}
	if len(jobs) != 1 {
		return j, fmt.Errorf("%w: job %s", core.ErrNotFound, j.ID)
	}
	if err := e.flowAfter(ctx, q, []flowRef{refOf(j)}); err != nil {
		return j, err
	}
	if err := e.countAwaited(ctx, q, []string{j.ID}, now, false); err != nil {
		return j, err
	}
	if err := e.cancelChildren(ctx, q, children, now); err != nil {
		return j, err
	}
	return jobs[0], nil
}
