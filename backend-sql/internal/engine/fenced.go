package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

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

// endRun closes the open run of j's current token.
func (e *Engine) endRun(ctx context.Context, q Querier, j core.Job, status core.RunStatus, now int64, msg string) error {
	_, err := q.Exec(ctx, e.render("UPDATE {s}runs SET status = ?, finished_at = ?, error = ? WHERE job_id = ? AND token = ? AND status = 'running'"),
		string(status), now, msg, j.ID, j.Lease.Token)
	return err
}

// cancelJob cancels j at now with reason and returns the stored job.
func (e *Engine) cancelJob(ctx context.Context, q Querier, j core.Job, now int64, reason string) (core.Job, error) {
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
	return jobs[0], nil
}

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

// Complete implements core.QueueBackend: one atomic dialect step per
// round of distinct job ids (a batch normally has one round).
func (e *Engine) Complete(ctx context.Context, items []core.Completion) ([]error, error) {
	if err := e.check("complete"); err != nil {
		return nil, err
	}
	if err := e.limits.ValidateBatch("completions", len(items)); err != nil {
		return nil, err
	}
	errs := make([]error, len(items))
	pending := make([]int, 0, len(items))
	for i, it := range items {
		if err := core.ValidateLease(it.Lease); err != nil {
			errs[i] = err
			continue
		}
		if err := e.limits.ValidatePayload("result", it.Result); err != nil {
			errs[i] = err
			continue
		}
		pending = append(pending, i)
	}
	for len(pending) > 0 {
		var round, later []int
		seen := map[string]bool{}
		for _, i := range pending {
			if seen[items[i].Lease.JobID] {
				later = append(later, i)
				continue
			}
			seen[items[i].Lease.JobID] = true
			round = append(round, i)
		}
		batch := make([]core.Completion, len(round))
		for k, i := range round {
			batch[k] = items[i]
		}
		ok, queues, err := e.d.Complete(ctx, e, batch, e.NowArg())
		if err != nil {
			return nil, e.wrap("complete", err)
		}
		for k, i := range round {
			if !ok[k] {
				errs[i] = fmt.Errorf("boson/%s: complete: %w: job %s is not running under token %d",
					e.d.Name(), core.ErrLeaseLost, items[i].Lease.JobID, items[i].Lease.Token)
			}
		}
		for _, name := range queues {
			e.hub.signal(name)
		}
		pending = later
	}
	return errs, nil
}

// CompleteSQL is the portable batched completion for stores without a
// single-statement form; q is one write transaction. Each chunk of up to
// 300 items costs two statements: an UPDATE ... FROM (VALUES ...) of the
// jobs, returning the accepted ones, and an UPDATE of their runs.
func (e *Engine) CompleteSQL(ctx context.Context, q Querier, items []core.Completion, now int64) ([]bool, []string, error) {
	ok := make([]bool, len(items))
	index := make(map[string]int, len(items))
	for k, it := range items {
		index[it.Lease.JobID] = k
	}
	var queues []string
	seen := map[string]bool{}
	const chunk = 300
	for start := 0; start < len(items); start += chunk {
		part := items[start:min(start+chunk, len(items))]
		args := make([]any, 0, 1+3*len(part))
		args = append(args, now)
		for _, it := range part {
			args = append(args, it.Lease.JobID, it.Lease.Token, nullBytes(it.Result))
		}
		values := strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", len(part)), ", ")
		var done []any
		err := e.scanAll(ctx, q, `UPDATE {s}jobs SET state = 'succeeded', result = v.column3, finished_at = ?
			FROM (VALUES `+values+`) AS v
			WHERE {s}jobs.id = v.column1 AND {s}jobs.token = v.column2 AND {s}jobs.state = 'running'
			RETURNING {s}jobs.id, {s}jobs.token, {s}jobs.queue`, args, func(rows Rows) error {
			var id, queue string
			var token int64
			if err := rows.Scan(&id, &token, &queue); err != nil {
				return err
			}
			ok[index[id]] = true
			done = append(done, id, token)
			if !seen[queue] {
				seen[queue] = true
				queues = append(queues, queue)
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		if len(done) == 0 {
			continue
		}
		pairs := strings.TrimSuffix(strings.Repeat("(?, ?), ", len(done)/2), ", ")
		if _, err := q.Exec(ctx, e.render(`UPDATE {s}runs SET status = 'succeeded', finished_at = ?
			WHERE status = 'running' AND (job_id, token) IN (VALUES `+pairs+`)`), append([]any{now}, done...)...); err != nil {
			return nil, nil, err
		}
	}
	return ok, queues, nil
}

// nullBytes stores an empty value as NULL.
func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// Fail implements core.QueueBackend.
func (e *Engine) Fail(ctx context.Context, f core.Failure) (core.JobState, error) {
	if err := e.check("fail"); err != nil {
		return "", err
	}
	if err := core.ValidateLease(f.Lease); err != nil {
		return "", err
	}
	msg := core.TruncateError(f.Error)
	var state core.JobState
	var queue string
	err := e.st.WriteTx(ctx, func(q Querier) error {
		j, now, err := e.lockFenced(ctx, q, f.Lease)
		if err != nil {
			return err
		}
		queue = j.Queue
		if err := e.endRun(ctx, q, j, core.RunFailed, now, msg); err != nil {
			return err
		}
		if f.Terminal || j.Attempt >= j.MaxAttempts {
			state = core.StateFailed
			_, err = q.Exec(ctx, e.render("UPDATE {s}jobs SET state = 'failed', finished_at = ?, last_error = ? WHERE id = ?"), now, msg, j.ID)
		} else {
			state = core.StateQueued
			runAt := max(toUS(f.RetryAt), now)
			_, err = q.Exec(ctx, e.render("UPDATE {s}jobs SET state = 'queued', run_at = ?, last_error = ? WHERE id = ?"), runAt, msg, j.ID)
		}
		if err != nil {
			return err
		}
		return e.d.Notify(ctx, e, q, []string{j.Queue})
	})
	if err != nil {
		return "", e.wrap("fail", err)
	}
	e.hub.signal(queue)
	return state, nil
}

// Sleep implements core.QueueBackend.
func (e *Engine) Sleep(ctx context.Context, lease core.Lease, until time.Time) error {
	if err := e.check("sleep"); err != nil {
		return err
	}
	if err := core.ValidateLease(lease); err != nil {
		return err
	}
	if !until.IsZero() && (until.Year() < 1970 || until.Year() > 9999) {
		return fmt.Errorf("%w: until: %v is outside the years 1970 to 9999", core.ErrInvalidArgument, until)
	}
	err := e.st.WriteTx(ctx, func(q Querier) error {
		j, now, err := e.lockFenced(ctx, q, lease)
		if err != nil {
			return err
		}
		if err := e.endRun(ctx, q, j, core.RunSleeping, now, ""); err != nil {
			return err
		}
		wake := max(toUS(until), now)
		_, err = q.Exec(ctx, e.render("UPDATE {s}jobs SET state = 'sleeping', run_at = ? WHERE id = ?"), wake, j.ID)
		return err
	})
	return e.wrap("sleep", err)
}

// SaveCheckpoint implements core.QueueBackend.
func (e *Engine) SaveCheckpoint(ctx context.Context, lease core.Lease, step string, value []byte) ([]byte, error) {
	if err := e.check("save checkpoint"); err != nil {
		return nil, err
	}
	if err := core.ValidateLease(lease); err != nil {
		return nil, err
	}
	if err := core.ValidateName("step", step); err != nil {
		return nil, err
	}
	if err := e.limits.ValidatePayload("value", value); err != nil {
		return nil, err
	}
	var stored []byte
	err := e.st.WriteTx(ctx, func(q Querier) error {
		stored = nil
		j, now, err := e.lockFenced(ctx, q, lease)
		if err != nil {
			return err
		}
		if _, err := q.Exec(ctx, e.render("INSERT INTO {s}checkpoints (job_id, step, value, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (job_id, step) DO NOTHING"),
			j.ID, step, nullBytes(value), now); err != nil {
			return err
		}
		rows, err := q.Query(ctx, e.render("SELECT value FROM {s}checkpoints WHERE job_id = ? AND step = ?"), j.ID, step)
		if err != nil {
			return err
		}
		defer rows.Close()
		if rows.Next() {
			if err := rows.Scan(&stored); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, e.wrap("save checkpoint", err)
	}
	if len(stored) == 0 {
		if value != nil {
			return []byte{}, nil
		}
		return nil, nil
	}
	return append([]byte(nil), stored...), nil
}
