package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/boson-go/boson/core"
)

var _ core.BulkActor = (*Engine)(nil)

// bulkDeadlockTries is how many times BulkStep runs a step whose
// transaction Postgres aborted to break a deadlock with a worker's.
const bulkDeadlockTries = 3

// BulkStep implements core.BulkActor: it reads the step's jobs with the
// statement of SearchJobs (one page of req.Limit after req.Cursor), then
// applies the action to all of them in one write transaction. That
// transaction locks the jobs' rows in id order, checks each one's state
// as Cancel, Retry and DeleteJob do, and changes the jobs that allow the
// action with one statement per kind of change: a cancelled running job
// has its run closed as cancelled and its lease superseded, a retried job
// whose attempts are spent gets one more, a deleted job loses its runs
// and checkpoints. The store's notifications, the claim cursor notes and
// the local wake-ups are those of the per-job calls, once per queue (and
// priority) rather than once per job. A job already cancelled counts as
// Changed by a cancel, as Cancel returns it without error; a job that
// moved to a state the action refuses, or was deleted, counts as Skipped.
// When the transaction fails nothing changed: the step returns no counts,
// a Next equal to req.Cursor and the error.
func (e *Engine) BulkStep(ctx context.Context, req core.BulkRequest) (core.BulkResult, error) {
	op := "bulk " + string(req.Action)
	if err := e.check(op); err != nil {
		return core.BulkResult{}, err
	}
	ids, res, err := core.BulkPage(ctx, e, req)
	if err != nil || len(ids) == 0 {
		return res, err
	}
	slices.Sort(ids) // the lock order of every bulk step
	var eff bulkEffects
	for try := 1; ; try++ {
		err = e.st.WriteTx(ctx, func(q Querier) error {
			eff = bulkEffects{}
			return e.bulkIn(ctx, q, req, ids, &eff)
		})
		// A deadlock, or (for a retry) a while-active key that an enqueue
		// took after retakeKeys looked, runs the step again: the rerun
		// sees the holder and reports that job as failed.
		var pe *pgconn.PgError
		if err == nil || try == bulkDeadlockTries || !errors.As(err, &pe) ||
			(pe.Code != "40P01" && (pe.Code != "23505" || req.Action != core.BulkRetry)) {
			break
		}
	}
	if err != nil {
		return core.BulkResult{Next: req.Cursor}, e.wrap(op, err)
	}
	for _, d := range eff.due {
		e.cursors.noteDue(d)
	}
	for _, queue := range eff.queues {
		e.hub.signal(queue)
	}
	res.Matched = int64(len(ids))
	res.Changed = eff.changed
	res.Failed = len(eff.failed)
	res.Errors = eff.failed[:min(len(eff.failed), core.MaxBulkErrors)]
	res.Skipped = len(ids) - eff.changed - res.Failed
	return res, nil
}

// bulkEffects is what one bulk transaction did: how many jobs took the
// action, and whom to tell once it commits.
type bulkEffects struct {
	changed int
	// failed holds the jobs the action refused for another reason (a
	// while-active key another job holds, for a retry).
	failed []core.BulkError
	// queues holds the queues whose jobs changed, for local wake-ups.
	queues []string
	// due holds, for a retry, each queue and priority of the jobs queued
	// again, for the claim cursors.
	due []dueJob
}

// addQueue records a queue whose jobs changed.
func (b *bulkEffects) addQueue(queue string) {
	if !slices.Contains(b.queues, queue) {
		b.queues = append(b.queues, queue)
	}
}

// bulkIn applies req's action to the jobs ids (sorted) inside q, a write
// transaction, and records what it did in eff.
func (e *Engine) bulkIn(ctx context.Context, q Querier, req core.BulkRequest, ids []string, eff *bulkEffects) error {
	cond, arg := e.inStrings("id", ids)
	var now int64
	var change, running []string
	err := e.scanAll(ctx, q, "SELECT {now}, id, state, queue FROM {s}jobs WHERE "+cond+" ORDER BY id"+e.d.LockRows(),
		[]any{e.NowArg(), arg}, func(rows Rows) error {
			var id, state, queue string
			if err := rows.Scan(&now, &id, &state, &queue); err != nil {
				return err
			}
			switch bulkVerdict(req, core.JobState(state)) {
			case bulkChange:
				change = append(change, id)
				if state == string(core.StateRunning) {
					running = append(running, id)
				}
				if req.Action == core.BulkCancel {
					eff.addQueue(queue)
				}
			case bulkAlready:
				eff.changed++
			}
			return nil
		})
	if err != nil || len(change) == 0 {
		return err
	}
	eff.changed += len(change)
	switch req.Action {
	case core.BulkCancel:
		return e.bulkCancel(ctx, q, req.Reason, change, running, now, eff)
	case core.BulkRetry:
		return e.bulkRetry(ctx, q, change, now, eff)
	}
	_, err = e.deleteJobs(ctx, q, change)
	return err
}

// The verdicts of a bulk action on a job in some state.
const (
	bulkRefuse  = iota // the per-job call refuses: Skipped
	bulkChange         // the job takes the action: Changed
	bulkAlready        // the per-job call succeeds without a change: Changed
)

// bulkVerdict is the state check of Cancel, Retry or DeleteJob for
// req's action on a job in state st.
func bulkVerdict(req core.BulkRequest, st core.JobState) int {
	switch req.Action {
	case core.BulkCancel:
		switch st {
		case core.StateCancelled:
			return bulkAlready
		case core.StateSucceeded, core.StateFailed:
			return bulkRefuse
		}
		return bulkChange
	case core.BulkRetry:
		if st == core.StateFailed || st == core.StateCancelled {
			return bulkChange
		}
		return bulkRefuse
	}
	if st == core.StateRunning && !req.Force {
		return bulkRefuse
	}
	return bulkChange
}

// bulkCancel cancels the locked jobs ids at now, closing as cancelled the
// runs of those of them that are running, and queues the store's
// notification of their queues, as cancelIn does for one job.
func (e *Engine) bulkCancel(ctx context.Context, q Querier, reason string, ids, running []string, now int64, eff *bulkEffects) error {
	reason = core.CancelReason(reason)
	if len(running) > 0 {
		cond, arg := e.inStrings("id", running)
		if _, err := q.Exec(ctx, e.render(`INSERT INTO {s}runs (job_id, token, id, attempt, worker_id, status, started_at, finished_at, error)
			SELECT id, token, run_id, attempt, worker_id, ?, started_at, ?, ? FROM {s}jobs WHERE `+cond+` AND state = 'running'`),
			string(core.RunCancelled), now, reason, arg); err != nil {
			return err
		}
	}
	if err := e.flowAfterIDs(ctx, q, ids); err != nil {
		return err
	}
	jcond, jarg := e.inStrings("j.id", ids)
	children, err := e.ccChildren(ctx, q, jcond, []any{jarg})
	if err != nil {
		return err
	}
	cond, arg := e.inStrings("id", ids)
	n, err := q.Exec(ctx, e.render("UPDATE {s}jobs SET state = 'cancelled', finished_at = ?, last_error = ? WHERE "+cond), now, reason, arg)
	if err != nil {
		return err
	}
	if int(n) != len(ids) {
		return fmt.Errorf("bulk cancel changed %d of %d locked jobs", n, len(ids))
	}
	if err := e.countAwaited(ctx, q, ids, now, false); err != nil {
		return err
	}
	if err := e.cancelChildren(ctx, q, children, now); err != nil {
		return err
	}
	return e.d.Notify(ctx, e, q, eff.queues)
}

// bulkRetry queues the locked jobs ids again at now, with
// one more attempt for those whose attempts are spent, and queues the
// store's notification of each queue and priority, as retryIn does for
// one job.
func (e *Engine) bulkRetry(ctx context.Context, q Querier, ids []string, now int64, eff *bulkEffects) error {
	ids, err := e.retakeKeys(ctx, q, ids, eff)
	if err != nil || len(ids) == 0 {
		return err
	}
	if err := e.flowAfterIDs(ctx, q, ids); err != nil {
		return err
	}
	cond, arg := e.inStrings("id", ids)
	var payloads []string
	err = e.scanAll(ctx, q, `UPDATE {s}jobs SET state = 'queued', run_at = ?, finished_at = 0,
		max_attempts = CASE WHEN attempt >= max_attempts THEN attempt + 1 ELSE max_attempts END`+flowRetrySet+awaitRetrySet+`
		WHERE `+cond+` RETURNING queue, priority`, []any{now, arg}, func(rows Rows) error {
		d := dueJob{runAt: now}
		if err := rows.Scan(&d.queue, &d.prio); err != nil {
			return err
		}
		if !slices.Contains(eff.due, d) {
			eff.due = append(eff.due, d)
			payloads = append(payloads, d.payload())
		}
		eff.addQueue(d.queue)
		return nil
	})
	if err != nil {
		return err
	}
	return e.d.Notify(ctx, e, q, payloads)
}
