package engine

import (
	"context"
	"fmt"

	"github.com/boson-go/boson/core"
)

// jobExists reports whether a job id is stored.
func (e *Engine) jobExists(ctx context.Context, q Querier, jobID string) (bool, error) {
	if !plausibleID(jobID) {
		return false, nil
	}
	n, err := e.count(ctx, q, "SELECT count(*) FROM {s}jobs WHERE id = ?", jobID)
	return n > 0, err
}

// ListRuns implements core.QueueBackend.
func (e *Engine) ListRuns(ctx context.Context, jobID string) ([]core.Run, error) {
	if err := e.check("list runs"); err != nil {
		return nil, err
	}
	r := e.st.Reader()
	ok, err := e.jobExists(ctx, r, jobID)
	if err != nil {
		return nil, e.wrap("list runs", err)
	}
	if !ok {
		return nil, fmt.Errorf("boson/%s: list runs: %w: job %q", e.d.Name(), core.ErrNotFound, jobID)
	}
	var out []core.Run
	// Finished runs are rows of runs; the open run of a running job is in
	// the job row. One statement reads both from one snapshot.
	err = e.scanAll(ctx, r, `SELECT id, job_id, attempt, worker_id, token, status, started_at, finished_at, error FROM {s}runs WHERE job_id = ?
		UNION ALL
		SELECT run_id, id, attempt, worker_id, token, 'running', started_at, 0, '' FROM {s}jobs WHERE id = ? AND state = 'running'
		ORDER BY token, id`,
		[]any{jobID, jobID}, func(rows Rows) error {
			var run core.Run
			var status string
			var started, finished int64
			if err := rows.Scan(&run.ID, &run.JobID, &run.Attempt, &run.WorkerID, &run.Token, &status, &started, &finished, &run.Error); err != nil {
				return err
			}
			run.Status = core.RunStatus(status)
			run.StartedAt, run.FinishedAt = fromUS(started), fromUS(finished)
			out = append(out, run)
			return nil
		})
	if err != nil {
		return nil, e.wrap("list runs", err)
	}
	return out, nil
}

// Checkpoints implements core.QueueBackend.
func (e *Engine) Checkpoints(ctx context.Context, jobID string) ([]core.Checkpoint, error) {
	if err := e.check("checkpoints"); err != nil {
		return nil, err
	}
	r := e.st.Reader()
	ok, err := e.jobExists(ctx, r, jobID)
	if err != nil {
		return nil, e.wrap("checkpoints", err)
	}
	if !ok {
		return nil, fmt.Errorf("boson/%s: checkpoints: %w: job %q", e.d.Name(), core.ErrNotFound, jobID)
	}
	var out []core.Checkpoint
	err = e.scanAll(ctx, r, "SELECT job_id, step, value, created_at FROM {s}checkpoints WHERE job_id = ? ORDER BY step",
		[]any{jobID}, func(rows Rows) error {
			var c core.Checkpoint
			var created int64
			if err := rows.Scan(&c.JobID, &c.Step, &c.Value, &created); err != nil {
				return err
			}
			if c.Value == nil {
				c.Value = []byte{}
			}
			c.CreatedAt = fromUS(created)
			out = append(out, c)
			return nil
		})
	if err != nil {
		return nil, e.wrap("checkpoints", err)
	}
	return out, nil
}
