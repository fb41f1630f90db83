package engine

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/boson-go/boson/core"
)

// Postgres is the PostgreSQL dialect: numbered placeholders, the server's
// now() when no clock is configured, row locks with SKIP LOCKED, unnest
// batches, and NOTIFY inside the writing transaction.
type Postgres struct{}

const pgNow = "coalesce(?::bigint, (extract(epoch from now()) * 1000000)::bigint)"

// Name implements Dialect.
func (Postgres) Name() string { return "postgres" }

// NumberedPlaceholders implements Dialect.
func (Postgres) NumberedPlaceholders() bool { return true }

// NowExpr implements Dialect.
func (Postgres) NowExpr() string { return pgNow }

// ServerClock implements Dialect.
func (Postgres) ServerClock() bool { return true }

// LockRows implements Dialect.
func (Postgres) LockRows() string { return " FOR UPDATE" }

// SkipLocked implements Dialect.
func (Postgres) SkipLocked() string { return " FOR UPDATE SKIP LOCKED" }

// pgClaim is the whole claim in one statement: cancel the due jobs past a
// deadline, lock the first Limit due jobs in claim order with SKIP
// LOCKED, and mark them running, each with a new run id (the run row is
// written when the attempt ends).
var pgClaim = `WITH clk AS (SELECT ` + pgNow + ` AS t),
expired AS (
	UPDATE {s}jobs SET state = 'cancelled', finished_at = (SELECT t FROM clk),
		last_error = CASE WHEN first_started_at = 0 THEN '` + ReasonMaxDelay + `' ELSE '` + ReasonMaxDuration + `' END
	WHERE id = ANY (ARRAY(SELECT id FROM {s}jobs WHERE queue = ? AND state IN ('queued', 'sleeping')
		AND run_at <= (SELECT t FROM clk) AND deadline_at <= (SELECT t FROM clk)
		AND NOT EXISTS (SELECT 1 FROM {s}queue_configs WHERE queue = ? AND paused <> 0)
		AND NOT EXISTS (SELECT 1 FROM {s}flow_switch WHERE seq <> 0 OR limits <> 0)
		AND NOT (wait_cc <> 0 AND state = 'sleeping' AND token = wait_token) FOR UPDATE SKIP LOCKED))
	RETURNING id, awaited_by),
picked AS (
	SELECT id FROM {s}jobs
	WHERE queue = ? {after}AND state IN ('queued', 'sleeping') AND seq_gate = 0 AND key_gate = 0 AND run_at <= (SELECT t FROM clk)
		AND (deadline_at IS NULL OR deadline_at > (SELECT t FROM clk))
		AND NOT EXISTS (SELECT 1 FROM {s}queue_configs WHERE queue = ? AND paused <> 0)
		AND NOT EXISTS (SELECT 1 FROM {s}flow_switch WHERE seq <> 0 OR limits <> 0)
	ORDER BY priority, run_at, id LIMIT ? FOR UPDATE SKIP LOCKED),
numbered AS (SELECT id, row_number() OVER () AS n FROM picked),
claimed AS (
	UPDATE {s}jobs j SET ` + pgClaimSet + `
	FROM numbered WHERE j.id = numbered.id
	RETURNING j.*),
` + pgCountCTEs("expired", "(SELECT id FROM expired UNION ALL SELECT id FROM picked)") + `
SELECT `

// pgClaimSet is the SET list that marks a job j running under a new
// lease at the statement's clock (CTE clk); its placeholders are the
// worker and the lease's length in microseconds.
const pgClaimSet = `state = 'running',
		attempt = CASE WHEN j.state = 'sleeping' THEN j.attempt ELSE j.attempt + 1 END,
		token = j.token + 1, worker_id = ?, lease_expires_at = (SELECT t FROM clk) + ?::bigint,
		first_started_at = CASE WHEN j.first_started_at = 0 THEN (SELECT t FROM clk) ELSE j.first_started_at END,
		deadline_at = CASE WHEN j.first_started_at = 0
			THEN (CASE WHEN j.max_duration > 0 THEN (SELECT t FROM clk) + (j.max_duration + 999) / 1000 ELSE NULL END)
			ELSE j.deadline_at END,
		started_at = (SELECT t FROM clk), run_id = j.id || '.' || (j.token + 1)::text`

// pgCountCTEs counts, in the statement that ended them, the awaited jobs
// among the rows of the CTE ended (id, awaited_by: their latest
// versions, which Postgres re-read under their locks) on their waiters'
// rows, and wakes the waiters whose current wait that satisfies (see
// await.go): CTE woke returns, per woken waiter, the notification
// payload of its position. A waiter that the statement changes itself
// (the rows of skip) is left alone: a row changes once per statement.
// Its placeholder is the notification channel.
func pgCountCTEs(ended, skip string) string {
	return `awaits AS (
	SELECT split_part(x, ':', 1)::bigint AS tok, substr(x, strpos(x, ':') + 1) AS wid
	FROM ` + ended + `, unnest(` + ended + `.awaited_by) AS x WHERE ` + ended + `.awaited_by IS NOT NULL),
counted AS (
	SELECT DISTINCT ON (wid) wid, tok, count(*) OVER (PARTITION BY wid, tok) AS n FROM awaits ORDER BY wid, tok DESC),
woke AS (
	UPDATE {s}jobs w SET ` + waitSQL(waitSet, "(SELECT t FROM clk)") + `
	FROM counted d WHERE ` + waitWhere + ` AND w.id NOT IN ` + skip + `
	RETURNING CASE WHEN ` + waitSQL(waitWoken, "(SELECT t FROM clk)") + `
		THEN pg_notify(?, w.queue || ' ' || w.priority || ' ' || w.run_at || ' ' || w.run_at) END AS sent,
		w.queue, w.priority, w.run_at, ` + waitSQL(waitWoken, "(SELECT t FROM clk)") + ` AS woken)`
}

// pgClaimResult ends the claim statement: each claimed job after a false
// flag, or, when it claimed nothing because flow control is on, one row
// whose flag is true (its job columns are zero values). The statement's
// own read of the switch answers the question, so an empty claim needs no
// second command to learn why it was empty.
var pgClaimResult = "false, " + JobCols("") + " FROM claimed UNION ALL SELECT true, " + jobZeros() +
	" WHERE NOT EXISTS (SELECT 1 FROM claimed) AND EXISTS (SELECT 1 FROM {s}flow_switch WHERE seq <> 0 OR limits <> 0)"

// pgClaimHead starts at the head of the claim index; pgClaimAfter starts
// after a cursor position (see cursor.go), which the row comparison
// makes the start of the index scan.
var (
	pgClaimHead  = strings.Replace(pgClaim, "{after}", "", 1) + pgClaimResult
	pgClaimAfter = strings.Replace(pgClaim, "{after}", "AND (priority, run_at, id) > (?::integer, ?::bigint, ?::text) ", 1) +
		pgClaimResult
)

// pgSortOffSQL turns sorting off for the rest of the transaction, so
// that the planner reads a claim's candidates in claim order from
// jobs_claim. The claim's ORDER BY ... LIMIT has two plans: walk the
// partial claim index, which is ordered, and stop after Limit entries; or
// read every row of the queue through another index that starts with the
// queue (jobs_queue_created, jobs_queue_state, jobs_queue) and sort them.
// When the statistics predict one matching row, the two cost the same and
// the planner may take the second: a queue that held nothing when the
// table was last analysed, or a cursor position past every run_at the
// statistics have seen. It is then wrong by the size of the backlog: a
// flow claim sorted 47,500 rows on disk (external merge, 4.8 MB) for
// each claim of 50, and a drain of 50,000 jobs fell from 10k/s to 0.8k/s.
// With sorting off, the sort costs more than any ordered index scan,
// and jobs_claim is the only index in claim order. The claim statements
// have no other sort that an index could replace: their small
// aggregates hash, and the counter upsert's ORDER BY over a few rows
// still sorts. A sort the planner cannot avoid now costs more than any
// threshold of the JIT compiler (jit_above_cost and the rest), which
// would then compile the statement each time it runs: about 900 ms a
// claim on Debian's PostgreSQL 15, where JIT is on. So JIT goes off with
// sorting; a claim reads tens of rows and never gains from it. Both
// settings are local: they end with the transaction (the pipeline's
// implicit one, or the flow claim's), and never reach another statement
// on the connection or behind a pooler.
const pgSortOffSQL = "SELECT set_config('enable_sort', 'off', true), set_config('jit', 'off', true)"

// pgClaimPipeline runs the claim statement sql on q with sorting off
// (pgSortOffSQL) and, when lock is set, under the flow lock. On a pgx
// querier the statements go out in one round trip, pipelined: outside a
// transaction Postgres runs them as one implicit transaction, committed
// by the pipeline's single Sync, and inside one they run in it. Postgres
// runs a pipeline's statements in order and takes the claim statement's
// snapshot when it binds or executes it, in either case after the lock's
// statement has returned, so the statement reads the counts and the
// clock with the lock held. A querier of another driver sends them one
// by one, which keeps both guarantees inside a transaction.
func (e *Engine) pgClaimPipeline(ctx context.Context, q Querier, lock bool, sql string, args []any) ([]core.Job, bool, error) {
	pq, ok := q.(PgxQuerier)
	if !ok {
		if _, err := q.Exec(ctx, pgSortOffSQL); err != nil {
			return nil, false, err
		}
		if lock {
			if err := e.flowLock(ctx, q); err != nil {
				return nil, false, err
			}
		}
		return collectClaimed(q.Query(ctx, sql, args...))
	}
	b := &pgx.Batch{}
	b.Queue(pgSortOffSQL)
	if lock {
		b.Queue(flowLockSQL, e.flowLockKey())
	}
	b.Queue(sql, args...)
	br := pq.C.SendBatch(ctx, b)
	for range b.Len() - 1 {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, false, err
		}
	}
	jobs, slow, err := collectClaimed(br.Query())
	return jobs, slow, errors.Join(err, br.Close())
}

// collectClaimed reads the rows of pgClaimResult: the claimed jobs, and
// whether flow control turned the claim away.
func collectClaimed(rows Rows, err error) (jobs []core.Job, flowOn bool, _ error) {
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	for rows.Next() {
		var flag bool
		j, err := ScanJob(rows, &flag)
		if err != nil {
			return nil, false, err
		}
		if flag {
			flowOn = true
			continue
		}
		jobs = append(jobs, j)
	}
	return jobs, flowOn, rows.Err()
}

// pgClaimStatement returns the claim statement of req that starts at st,
// and its arguments.
func pgClaimStatement(req core.ClaimRequest, st cursorStart, now any, channel string) (string, []any) {
	if st.head {
		return pgClaimHead, []any{now, req.Queue, req.Queue, req.Queue, req.Queue, req.Limit, req.WorkerID, ceilUS(req.LeaseTTL), channel}
	}
	return pgClaimAfter, []any{now, req.Queue, req.Queue, req.Queue, st.pos.prio, st.pos.runAt, st.pos.id,
		req.Queue, req.Limit, req.WorkerID, ceilUS(req.LeaseTTL), channel}
}

// Claim implements Dialect with one statement outside any explicit
// transaction. It starts where the queue's claim cursor says. That
// statement claims nothing while flow control is on (a sequence or a
// limit exists in the schema); the claim is then pgFlowClaim's, or
// ClaimFlow's when that one statement cannot decide, in one transaction
// under the flow lock, from the cursor while it holds back nothing it
// does not gate.
func (Postgres) Claim(ctx context.Context, e *Engine, req core.ClaimRequest, now any) ([]core.Job, error) {
	if !e.flowOn.Load() {
		st := e.cursors.start(req.Queue, now)
		sql, args := pgClaimStatement(req, st, now, e.channel)
		var jobs []core.Job
		var on bool
		err := e.st.WriteOne(ctx, func(q Querier) error {
			var err error
			jobs, on, err = e.pgClaimPipeline(ctx, q, false, e.render(sql), args)
			return err
		})
		if err != nil {
			return nil, err
		}
		e.cursors.done(req.Queue, st, now, req.Limit, req.LeaseTTL, jobs)
		if len(jobs) > 0 || !on {
			return jobs, nil
		}
		e.flowOn.Store(true)
	}
	st := e.cursors.start(req.Queue, now)
	if _, slow := e.flowSlow.Load(req.Queue); !slow {
		jobs, done, err := e.flowClaimAlone(ctx, req, st, now)
		if err != nil {
			return nil, err
		}
		if done {
			e.cursors.done(req.Queue, st, now, req.Limit, req.LeaseTTL, jobs)
			return jobs, nil
		}
		e.flowSlow.Store(req.Queue, true)
	}
	var jobs []core.Job
	var clean bool
	// keyed lists the tasks that a claim found must enter keyed mode
	// once it had locked jobs: the transaction is retried, entering them
	// first (see errNeedKeyed). Each retry adds a task, so it ends.
	var keyed []string
	tx := func(q Querier) error {
		sql, args := pgFlowClaimStatement(req, st, now)
		var slow bool
		var err error
		if len(keyed) == 0 {
			jobs, slow, err = e.pgClaimPipeline(ctx, q, true, e.render(sql), args)
		} else {
			if err := e.flowLock(ctx, q); err != nil {
				return err
			}
			if _, err := q.Exec(ctx, pgSortOffSQL); err != nil {
				return err
			}
			for _, task := range keyed {
				if err := e.enterKeyed(ctx, q, task); err != nil {
					return err
				}
			}
			jobs, slow, err = collectClaimed(q.Query(ctx, e.render(sql), args...))
		}
		if err != nil || !slow {
			if err == nil && len(keyed) == 0 {
				e.flowSlow.Delete(req.Queue)
			}
			clean = true
			return err
		}
		t, err := e.now(ctx, q)
		if err != nil {
			return err
		}
		on, err := e.flowSwitchOn(ctx, q)
		if err != nil {
			return err
		}
		if !on {
			e.flowOn.Store(false)
		}
		jobs, clean, err = e.claimFlow(ctx, q, req, t, &st, keyed)
		return err
	}
	for {
		err := e.st.WriteTx(ctx, tx)
		var need errNeedKeyed
		if errors.As(err, &need) && !slices.Contains(keyed, need.task) {
			keyed = append(keyed, need.task)
			continue
		}
		if err != nil {
			return nil, err
		}
		break
	}
	// The cursor follows a flow claim that held back nothing it did not
	// gate; otherwise the next claim starts at the head again.
	if clean {
		e.cursors.done(req.Queue, st, now, req.Limit, req.LeaseTTL, jobs)
	} else {
		e.cursors.reset(req.Queue)
	}
	return jobs, nil
}

// pgComplete finishes a batch in one statement: it marks the jobs
// succeeded, writes their finished runs from the job rows, and notifies
// each queue once. It finds the jobs by primary key: state concatenated
// with an empty string keeps the planner from reading them through
// jobs_lease (whose predicate is state = 'running'), which statistics
// make look small but which holds
// an entry for every job completed since vacuum last ran, so that a
// held-back vacuum made every completion walk all of them. It locks the
// job rows in id order (the held CTE, which the update joins, so that
// the update only writes rows the CTE has locked), the order of a bulk
// step's locks: a batch in any other order could deadlock with a bulk
// cancel or delete of the same jobs.
var pgComplete = `WITH clk AS (SELECT ` + pgNow + ` AS t),
input AS (SELECT * FROM unnest(?::text[], ?::int8[], ?::bytea[]) AS i(id, token, result)),
held AS MATERIALIZED (
	SELECT j.id FROM {s}jobs j JOIN input i ON j.id = i.id
	WHERE j.state || '' = 'running' AND j.token = i.token
	ORDER BY j.id FOR UPDATE OF j),
done AS (
	UPDATE {s}jobs j SET state = 'succeeded', result = i.result, finished_at = (SELECT t FROM clk)
	FROM held l, input i WHERE j.id = l.id AND i.id = l.id AND j.state || '' = 'running' AND j.token = i.token
	RETURNING j.id, j.token, j.queue, j.run_id, j.attempt, j.worker_id, j.started_at, j.finished_at,
		j.task, j.limit_key, j.sequence_key, j.awaited_by),
moved AS (
	UPDATE {s}flow_seqs f SET ready = f.ready + 1 FROM (SELECT DISTINCT queue, sequence_key FROM done WHERE sequence_key IS NOT NULL) AS d
	WHERE f.queue = d.queue AND f.seq = d.sequence_key
	RETURNING 1),
dec AS (
	SELECT y.scope, y.name, y.lkey, count(*) AS cnt FROM (
		SELECT 't' AS scope, task AS name, '' AS lkey FROM done
		UNION ALL SELECT 'q', queue, '' FROM done
		UNION ALL SELECT 'k', task, limit_key FROM done WHERE limit_key IS NOT NULL) AS y
	GROUP BY y.scope, y.name, y.lkey),
locked AS (
	SELECT c.scope, c.name, c.lkey, dec.cnt FROM {s}flow_counts c, dec
	WHERE c.scope = dec.scope AND c.name = dec.name AND c.lkey = dec.lkey
		AND (SELECT count(*) FROM moved) >= 0
	ORDER BY c.scope, c.name, c.lkey FOR UPDATE OF c),
freed AS (
	UPDATE {s}flow_counts c SET n = c.n - locked.cnt, ready = CASE WHEN c.scope = 'k' THEN c.ready + 1 ELSE c.ready END
	FROM locked
	WHERE c.scope = locked.scope AND c.name = locked.name AND c.lkey = locked.lkey),
closed AS (
	INSERT INTO {s}runs (job_id, token, id, attempt, worker_id, status, started_at, finished_at)
	SELECT id, token, run_id, attempt, worker_id, 'succeeded', started_at, finished_at FROM done),
` + pgCountCTEs("done", "(SELECT id FROM input)") + `
SELECT done.id, done.queue, 0, 0::bigint FROM done,
	(SELECT count(pg_notify(?, d.queue)) FROM (SELECT DISTINCT queue FROM done) d) n
UNION ALL SELECT NULL, queue, priority, run_at FROM woke WHERE woken`

// Complete implements Dialect with one statement: one round trip.
func (Postgres) Complete(ctx context.Context, e *Engine, items []core.Completion, now any) ([]bool, []string, error) {
	ids := make([]string, len(items))
	tokens := make([]int64, len(items))
	results := make([][]byte, len(items))
	for i, it := range items {
		ids[i], tokens[i] = it.Lease.JobID, it.Lease.Token
		if len(it.Result) > 0 {
			results[i] = it.Result
		}
	}
	done := map[string]bool{}
	var queues []string
	var woke []dueJob
	err := e.st.WriteOne(ctx, func(q Querier) error {
		clear(done)
		queues, woke = queues[:0], woke[:0]
		seen := map[string]bool{}
		return e.scanAll(ctx, q, pgComplete, []any{now, ids, tokens, results, e.channel, e.channel}, func(rows Rows) error {
			var id *string
			var d dueJob
			if err := rows.Scan(&id, &d.queue, &d.prio, &d.runAt); err != nil {
				return err
			}
			queue := d.queue
			if id != nil {
				done[*id] = true
			} else {
				woke = append(woke, d)
			}
			if !seen[queue] {
				seen[queue] = true
				queues = append(queues, queue)
			}
			return nil
		})
	})
	if err != nil {
		return nil, nil, err
	}
	// Woken waiters are noted here rather than by the listener, which
	// may hear of them after this process's next claim.
	for _, d := range woke {
		e.cursors.noteDue(d)
	}
	ok := make([]bool, len(items))
	for i, it := range items {
		ok[i] = done[it.Lease.JobID]
	}
	return ok, queues, nil
}

// Notify implements Dialect with pg_notify, delivered when q commits.
func (Postgres) Notify(ctx context.Context, e *Engine, q Querier, queues []string) error {
	_, err := q.Exec(ctx, e.render("SELECT pg_notify(?, x) FROM unnest(?::text[]) AS x"), e.channel, queues)
	return err
}
