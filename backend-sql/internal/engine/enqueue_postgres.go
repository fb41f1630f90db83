package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/boson-go/boson/core"
)

// BatchEnqueuer is implemented by dialects that store a whole prepared
// batch in one statement: the clock read, the rate-limit locks and
// checks, the insert, the idempotency lookups and the notification all
// happen in the store, so an enqueue costs one round trip.
type BatchEnqueuer interface {
	// EnqueueJobs stores jobs atomically and returns one result per job
	// and the queues that got new jobs. With inTx false, q is the store's
	// pool and the statement is its own transaction; with inTx true, q is
	// a transaction that the caller owns, which a refused batch leaves
	// usable. now is the decision time in microseconds, or NULL for the
	// store's clock.
	EnqueueJobs(ctx context.Context, e *Engine, q Querier, jobs []core.Job, now any, inTx bool) ([]core.EnqueueResult, []string, error)
}

// SQLSTATEs raised by the boson_enqueue function (migration 0002).
const (
	pgStateConflict    = "BQ001"
	pgStateRateLimited = "BQ002"
)

// pgEnqueue calls boson_enqueue2 (migration 6: boson_enqueue with the
// flow fields); its rows are the position, the reused
// flag, the store's decision time and, for a reused key, the stored job:
// first a row at position -1 that carries only the time, then one row
// per request that reused a stored job.
var pgEnqueue = `SELECT r.pos, r.reused, r.now_us, ` + JobCols("(r.job)") + ` FROM {s}boson_enqueue2(?::bigint, ?::text[], ?::text[], ?::text[],
	?::bytea[], ?::text[], ?::int4[], ?::int4[], ?::text[], ?::int8[], ?::int8[], ?::text[], ?::text[], ?::text[], ?::int8[], ?::text,
	?::text[], ?::int8[], ?::text[], ?::text[]) AS r`

// EnqueueJobs implements BatchEnqueuer with one call of boson_enqueue.
// The jobs' ids come from core.PrepareJobs; their run_at, created_at and
// deadline are decided in the store from the engine's time argument (the
// server's clock when it is NULL), which the call returns, so that the
// stored form of every new job is built here rather than sent back.
// Inside a caller's transaction the call is pipelined between a SAVEPOINT
// and its RELEASE, still one round trip; a refused batch costs a second
// one to roll back to the savepoint.
func (Postgres) EnqueueJobs(ctx context.Context, e *Engine, q Querier, jobs []core.Job, now any, inTx bool) ([]core.EnqueueResult, []string, error) {
	args := pgEnqueueArgs(e, jobs, now)
	runAt := args[14].([]int64)
	sql := e.render(pgEnqueue)
	res := make([]core.EnqueueResult, len(jobs))
	var queues []string
	scan := func(rows pgx.Rows) error {
		queues = queues[:0]
		clear(res)
		skip := make([]any, 3+len(jobColumns))
		var pos int
		var reused bool
		var at int64
		clock := false
		for rows.Next() {
			skip[0], skip[1], skip[2] = &pos, &reused, &at
			if err := rows.Scan(skip...); err != nil {
				return err
			}
			if pos == -1 {
				clock = true
				continue
			}
			if pos < 0 || pos >= len(res) || !reused {
				return fmt.Errorf("enqueue returned position %d (reused %v) of a batch of %d", pos, reused, len(res))
			}
			j, err := ScanJob(rows, &pos, &reused, &at)
			if err != nil {
				return err
			}
			res[pos] = core.EnqueueResult{Job: j, Reused: true}
		}
		if err := rows.Err(); err != nil {
			return pgEnqueueError(err)
		}
		if !clock {
			return fmt.Errorf("enqueue returned no decision time")
		}
		seen := map[string]bool{}
		for i, j := range jobs {
			if res[i].Reused {
				continue
			}
			// Stored as boson_enqueue stores it.
			j = cloneJob(j)
			j.CreatedAt = fromUS(at)
			j.RunAt = fromUS(max(runAt[i], at))
			res[i].Job = j
			if !seen[j.Queue] {
				seen[j.Queue] = true
				queues = append(queues, j.Queue)
			}
		}
		return nil
	}
	pq, ok := q.(PgxQuerier)
	if !ok {
		return nil, nil, fmt.Errorf("enqueue: %T is not a pgx querier", q)
	}
	if !inTx {
		rows, err := pq.C.Query(ctx, sql, args...)
		if err != nil {
			return nil, nil, pgEnqueueError(err)
		}
		defer rows.Close()
		if err := scan(rows); err != nil {
			return nil, nil, err
		}
		return res, queues, nil
	}
	b := &pgx.Batch{}
	b.Queue("SAVEPOINT boson_enqueue")
	b.Queue(sql, args...)
	b.Queue("RELEASE SAVEPOINT boson_enqueue")
	br := pq.C.SendBatch(ctx, b)
	err := pgBatchEnqueue(br, scan)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = pgEnqueueError(cerr)
	}
	if err != nil {
		// One simple-protocol query (no arguments): an aborted
		// transaction refuses to parse RELEASE until the rollback ran.
		if _, rbErr := pq.C.Exec(ctx, "ROLLBACK TO SAVEPOINT boson_enqueue; RELEASE SAVEPOINT boson_enqueue"); rbErr != nil {
			return nil, nil, fmt.Errorf("%w (rolling back to the savepoint: %v)", err, rbErr)
		}
		return nil, nil, err
	}
	return res, queues, nil
}

// pgBatchEnqueue reads the results of SAVEPOINT, the enqueue and RELEASE.
func pgBatchEnqueue(br pgx.BatchResults, scan func(pgx.Rows) error) error {
	if _, err := br.Exec(); err != nil {
		return err
	}
	rows, err := br.Query()
	if err != nil {
		return pgEnqueueError(err)
	}
	err = scan(rows)
	rows.Close()
	if err == nil {
		err = pgEnqueueError(rows.Err())
	}
	if err != nil {
		return err
	}
	_, err = br.Exec()
	return err
}

// pgEnqueueArgs lays the jobs out as the function's array arguments.
func pgEnqueueArgs(e *Engine, jobs []core.Job, now any) []any {
	n := len(jobs)
	ids, queues, tasks := make([]string, n), make([]string, n), make([]string, n)
	payloads := make([][]byte, n)
	headers, retries, fps, actors := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	prio, maxAtt := make([]int32, n), make([]int32, n)
	maxDelay, maxDur, runAt := make([]int64, n), make([]int64, n), make([]int64, n)
	keys := make([]*string, n)
	uniq, period := make([]string, n), make([]int64, n)
	lkeys, skeys := make([]*string, n), make([]*string, n)
	for i, j := range jobs {
		uniq[i], period[i] = string(j.Unique), int64(j.UniquePeriod)
		if j.LimitKey != "" {
			k := j.LimitKey
			lkeys[i] = &k
		}
		if j.SequenceKey != "" {
			k := j.SequenceKey
			skeys[i] = &k
		}
		ids[i], queues[i], tasks[i] = j.ID, j.Queue, j.Task
		if len(j.Payload) > 0 {
			payloads[i] = j.Payload
		}
		headers[i], retries[i], fps[i], actors[i] = EncodeHeaders(j.Headers), EncodeRetry(j.Retry), j.Fingerprint, j.Actor
		prio[i], maxAtt[i] = int32(j.Priority), int32(j.MaxAttempts)
		maxDelay[i], maxDur[i] = int64(j.Cancel.MaxDelay), int64(j.Cancel.MaxDuration)
		// PrepareJobs set RunAt to the later of the requested time and
		// its own clock; the store takes the later of it and its clock.
		if j.RunAt.After(j.CreatedAt) {
			runAt[i] = toUS(j.RunAt)
		}
		if j.IdempotencyKey != "" {
			k := j.IdempotencyKey
			keys[i] = &k
		}
	}
	return []any{now, ids, queues, tasks, payloads, headers, prio, maxAtt, retries, maxDelay, maxDur, keys, fps, actors, runAt, e.channel,
		uniq, period, lkeys, skeys}
}

// pgEnqueueError maps the function's SQLSTATEs to core's sentinels.
func pgEnqueueError(err error) error {
	var pe *pgconn.PgError
	if err == nil || !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case pgStateConflict:
		idx, convErr := strconv.Atoi(pe.Detail)
		if convErr != nil {
			return fmt.Errorf("%w: %s", core.ErrIdempotencyConflict, pe.Message)
		}
		return &core.BatchError{Index: idx, Err: fmt.Errorf("%w: %s", core.ErrIdempotencyConflict, pe.Message)}
	case pgStateRateLimited:
		return fmt.Errorf("%w: %s", core.ErrRateLimited, pe.Message)
	}
	return err
}

// enqueueBatch prepares reqs and stores them through a BatchEnqueuer.
// PrepareJobs stamps the configured clock's time, else the process
// clock's (it orders the ids); the store decides the stored times from
// the same configured time, or from its own clock.
func (e *Engine) enqueueBatch(ctx context.Context, be BatchEnqueuer, q Querier, reqs []core.EnqueueRequest, inTx bool) ([]core.EnqueueResult, []string, error) {
	t := time.Now()
	var now any
	if e.clock != nil {
		t = e.clock.Now()
		now = toUS(t)
	}
	jobs, err := core.PrepareJobs(reqs, t, e.limits)
	if err != nil {
		return nil, nil, err
	}
	return be.EnqueueJobs(ctx, e, q, jobs, now, inTx)
}

var (
	_ BatchEnqueuer = Postgres{}
	_ RowInserter   = SQLite{}
)
