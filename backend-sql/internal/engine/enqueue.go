package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/boson-go/boson/core"
)

// Enqueue implements core.QueueBackend.
func (e *Engine) Enqueue(ctx context.Context, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	if err := e.check("enqueue"); err != nil {
		return nil, err
	}
	if err := e.validateEnqueue(reqs); err != nil {
		return nil, err
	}
	var res []core.EnqueueResult
	var queues []string
	var err error
	if be, ok := e.d.(BatchEnqueuer); ok {
		err = e.st.WriteOne(ctx, func(q Querier) error {
			res, queues, err = e.enqueueBatch(ctx, be, q, reqs, false)
			return err
		})
	} else {
		err = e.st.WriteTx(ctx, func(q Querier) error {
			var err error
			res, queues, err = e.enqueueIn(ctx, q, reqs)
			return err
		})
	}
	if err != nil {
		return nil, e.wrap("enqueue", err)
	}
	e.cursors.noteJobs(res)
	for _, name := range queues {
		e.hub.signal(name)
	}
	return res, nil
}

// EnqueueIn enqueues inside a transaction that the caller owns. It works
// under a savepoint, so a refused batch leaves the caller's transaction
// as it was.
func (e *Engine) EnqueueIn(ctx context.Context, q Querier, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	if err := e.check("enqueue"); err != nil {
		return nil, err
	}
	if err := e.validateEnqueue(reqs); err != nil {
		return nil, err
	}
	if be, ok := e.d.(BatchEnqueuer); ok {
		res, _, err := e.enqueueBatch(ctx, be, q, reqs, true)
		if err != nil {
			return nil, e.wrap("enqueue", err)
		}
		return res, nil
	}
	if _, err := q.Exec(ctx, "SAVEPOINT boson_enqueue"); err != nil {
		return nil, e.wrap("enqueue: savepoint", err)
	}
	res, _, err := e.enqueueIn(ctx, q, reqs)
	if err != nil {
		if _, rbErr := q.Exec(ctx, "ROLLBACK TO SAVEPOINT boson_enqueue"); rbErr != nil {
			return nil, e.wrap("enqueue", fmt.Errorf("%w (rolling back to the savepoint: %v)", err, rbErr))
		}
		_, _ = q.Exec(ctx, "RELEASE SAVEPOINT boson_enqueue")
		return nil, e.wrap("enqueue", err)
	}
	if _, err := q.Exec(ctx, "RELEASE SAVEPOINT boson_enqueue"); err != nil {
		return nil, e.wrap("enqueue: release savepoint", err)
	}
	return res, nil
}

// validateEnqueue rejects a bad batch before it reaches the store.
func (e *Engine) validateEnqueue(reqs []core.EnqueueRequest) error {
	if err := e.limits.ValidateBatch("batch size", len(reqs)); err != nil {
		return err
	}
	for i, r := range reqs {
		if err := core.ValidateRequest(r, e.limits); err != nil {
			return &core.BatchError{Index: i, Err: err}
		}
	}
	return nil
}

type taskLimit struct{ inFlight, perSecond int }

// enqueueIn does the work of Enqueue on q and returns the queues that got
// new jobs.
func (e *Engine) enqueueIn(ctx context.Context, q Querier, reqs []core.EnqueueRequest) ([]core.EnqueueResult, []string, error) {
	now, limits, err := e.lockTaskLimits(ctx, q, reqs)
	if err != nil {
		return nil, nil, err
	}
	jobs, err := core.PrepareJobs(reqs, fromUS(now), e.limits)
	if err != nil {
		return nil, nil, err
	}
	ins, ok := e.d.(RowInserter)
	if !ok {
		return nil, nil, fmt.Errorf("%w: the %s dialect has no enqueue", core.ErrUnsupported, e.d.Name())
	}
	if err := e.releasePeriods(ctx, q, jobs, now); err != nil {
		return nil, nil, err
	}
	inserted, err := ins.InsertJobs(ctx, e, q, jobs)
	if err != nil {
		return nil, nil, err
	}
	if err := e.markNewSeqs(ctx, q, jobs, inserted); err != nil {
		return nil, nil, err
	}
	res := make([]core.EnqueueResult, len(jobs))
	var missing []int
	newPerTask := map[string]int{}
	var queues []string
	seenQueue := map[string]bool{}
	for i, j := range jobs {
		if !inserted[j.ID] {
			missing = append(missing, i)
			continue
		}
		res[i].Job = cloneJob(j)
		newPerTask[j.Task]++
		if !seenQueue[j.Queue] {
			seenQueue[j.Queue] = true
			queues = append(queues, j.Queue)
		}
	}
	if len(missing) > 0 {
		held, err := e.lookupKeys(ctx, q, jobs, missing)
		if err != nil {
			return nil, nil, err
		}
		for _, i := range missing {
			j := jobs[i]
			if j.IdempotencyKey == "" {
				return nil, nil, fmt.Errorf("job %s was not stored", j.ID)
			}
			ex, ok := held[j.Queue+"\x00"+j.IdempotencyKey]
			if !ok {
				return nil, nil, fmt.Errorf("idempotency key %q of queue %q is held by a job that vanished; try again", j.IdempotencyKey, j.Queue)
			}
			if ex.Fingerprint != j.Fingerprint {
				return nil, nil, &core.BatchError{Index: i, Err: fmt.Errorf("%w: key %q of queue %q is held by job %s with another request",
					core.ErrIdempotencyConflict, j.IdempotencyKey, j.Queue, ex.ID)}
			}
			res[i] = core.EnqueueResult{Job: cloneJob(ex), Reused: true}
		}
	}
	if err := e.checkTaskLimits(ctx, q, limits, newPerTask, now); err != nil {
		return nil, nil, err
	}
	return res, queues, nil
}

// lockTaskLimits reads the decision time and (locking them where the
// store locks rows) the limits of the batch's tasks, in one query, so
// that concurrent enqueues of a limited task take turns.
func (e *Engine) lockTaskLimits(ctx context.Context, q Querier, reqs []core.EnqueueRequest) (int64, map[string]taskLimit, error) {
	args := []any{e.NowArg()}
	seen := map[string]bool{}
	for _, r := range reqs {
		if !seen[r.Task] {
			seen[r.Task] = true
			args = append(args, r.Task)
		}
	}
	rows, err := q.Query(ctx, e.render(`SELECT {now}, coalesce(c.task, ''), coalesce(c.max_in_flight, 0), coalesce(c.max_enqueue_per_second, 0)
		FROM (SELECT 1 AS one) AS one LEFT JOIN (SELECT task, max_in_flight, max_enqueue_per_second FROM {s}task_configs
			WHERE task IN (`+placeholders(len(args)-1)+`) AND (max_in_flight > 0 OR max_enqueue_per_second > 0)
			ORDER BY task`+e.d.LockRows()+`) AS c ON 1 = 1`), args...)
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	var now int64
	out := map[string]taskLimit{}
	for rows.Next() {
		var task string
		var l taskLimit
		if err := rows.Scan(&now, &task, &l.inFlight, &l.perSecond); err != nil {
			return 0, nil, err
		}
		if task != "" {
			out[task] = l
		}
	}
	return now, out, rows.Err()
}

// checkTaskLimits counts, after the insert, what the limits bound.
func (e *Engine) checkTaskLimits(ctx context.Context, q Querier, limits map[string]taskLimit, added map[string]int, now int64) error {
	for task, l := range limits {
		if added[task] == 0 {
			continue
		}
		if l.inFlight > 0 {
			n, err := e.count(ctx, q, "SELECT count(*) FROM {s}jobs WHERE task = ? AND finished_at = 0 AND state IN ('queued', 'running', 'sleeping')", task)
			if err != nil {
				return err
			}
			if n > int64(l.inFlight) {
				return fmt.Errorf("%w: task %q would have %d jobs in flight, its limit is %d", core.ErrRateLimited, task, n, l.inFlight)
			}
		}
		if l.perSecond > 0 {
			n, err := e.count(ctx, q, "SELECT count(*) FROM {s}jobs WHERE task = ? AND created_at > ? AND created_at <= ?",
				task, now-int64(time.Second/time.Microsecond), now)
			if err != nil {
				return err
			}
			if n > int64(l.perSecond) {
				return fmt.Errorf("%w: task %q would have %d jobs enqueued within a second, its limit is %d", core.ErrRateLimited, task, n, l.perSecond)
			}
		}
	}
	return nil
}

// lookupKeys returns the jobs holding the idempotency keys of jobs[idx],
// keyed by queue NUL key.
func (e *Engine) lookupKeys(ctx context.Context, q Querier, jobs []core.Job, idx []int) (map[string]core.Job, error) {
	out := map[string]core.Job{}
	const chunk = 200
	for start := 0; start < len(idx); start += chunk {
		part := idx[start:min(start+chunk, len(idx))]
		var conds []string
		var args []any
		for _, i := range part {
			conds = append(conds, "(queue = ? AND idempotency_key = ?)")
			args = append(args, jobs[i].Queue, jobs[i].IdempotencyKey)
		}
		found, err := collectJobs(q.Query(ctx, e.render("SELECT "+JobCols("")+" FROM {s}jobs WHERE ("+strings.Join(conds, " OR ")+") AND "+heldKey), args...))
		if err != nil {
			return nil, err
		}
		for _, j := range found {
			out[j.Queue+"\x00"+j.IdempotencyKey] = j
		}
	}
	return out, nil
}

// count runs a single-value count query.
func (e *Engine) count(ctx context.Context, q Querier, tmpl string, args ...any) (int64, error) {
	rows, err := q.Query(ctx, e.render(tmpl), args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	if rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, err
		}
	}
	return n, rows.Err()
}

// cloneJob copies a job so that the caller's slices and maps are not shared,
// and normalises empty payloads and headers as the store returns them.
func cloneJob(j core.Job) core.Job {
	if len(j.Payload) == 0 {
		j.Payload = nil
	} else {
		j.Payload = append([]byte(nil), j.Payload...)
	}
	if len(j.Result) == 0 {
		j.Result = nil
	} else {
		j.Result = append([]byte(nil), j.Result...)
	}
	if len(j.Headers) == 0 {
		j.Headers = nil
	} else {
		h := make(map[string]string, len(j.Headers))
		for k, v := range j.Headers {
			h[k] = v
		}
		j.Headers = h
	}
	return j
}
