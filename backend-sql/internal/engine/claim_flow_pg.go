package engine

import (
	"context"
	"strings"

	"github.com/boson-go/boson/core"
)

// The Postgres flow claim in one statement.
//
// ClaimFlow reads and writes the flow tables in a dozen statements, one
// round trip each, and all of them under the schema's flow lock, so
// every claim of the schema waits for them. Most claims need none of its
// care: no limit is near, no mark waits to open a gate, no sequence or
// start rate applies. pgFlowClaim claims those in a single statement
// under the same lock, and leaves everything else to ClaimFlow:
//
//   - It first checks, from partial indexes, that nothing waits for a
//     flow claim: the queue is not paused, no sequence of the queue is
//     marked, no marked key has gated jobs, and no due job of the queue
//     is past a cancellation deadline. Otherwise it locks nothing.
//   - It locks the first Limit ungated due jobs in claim order, as
//     ClaimFlow's walk starts, and reads their tasks' configs.
//   - It claims them only if every one of them may start: none is in a
//     sequence (every change in a sequence marks it, which sends the
//     claim to ClaimFlow first; this is a second guard), none of their
//     tasks limits its start rate, and every running count they add to
//     (task, limit key, queue) stays within its limit. A task outside
//     keyed mode (see enterKeyed) has no key rows: its own count, which
//     bounds every key's, must then stay within the per-key limit too;
//     otherwise ClaimFlow decides, which makes the task enter keyed mode.
//     A task in keyed mode that runs nothing also goes to ClaimFlow,
//     which takes it out. It then adds them to those counts (the task
//     row of every task with a MaxRunning or a per-key limit, the key
//     rows of tasks in keyed mode, the queue's row) and marks them
//     running.
//   - It takes off the marks it read on a row it counts in once they
//     reach pgMarksKept, as ClaimFlow takes off those of keys with
//     nothing gated: a marked key with gated jobs sent the claim to
//     ClaimFlow, so none of its rows has any. Marks added after its read
//     stay for the next claim. Below that it leaves them, so that its
//     write changes only the count, which no index holds: Postgres can
//     then write the row as a heap-only tuple, with no index entries
//     (the marks are in flow_counts_ready's predicate).
//   - Otherwise it claims nothing, and says so: the caller runs ClaimFlow
//     in the same transaction, which passes over, gates or holds what it
//     must.
//
// The counts it reads are exact or too high, never too low: the statement
// starts after the flow lock is taken, so it sees every claim before it
// (only claims, and config changes, under the same lock, raise a count),
// while completions that commit meanwhile only lower them. The counts it
// writes are upserts on the rows' latest versions, in key order, as
// every other writer of flow_counts takes them.

// pgMarksKept is how many marks a key may gather before pgFlowClaim
// takes them off: every completion adds one, and the column is 32 bits.
const pgMarksKept = "1024"

// pgNoLimit stands for no limit in pgFlowClaim's checks.
const pgNoLimit = "4611686018427387904"

// pgFlowClaim is the statement; {after} is the cursor's condition or
// nothing. Its arguments are now, the queue four times [, the cursor's
// priority, run_at and id], the limit, the worker and the lease's length
// in microseconds. Its rows are those of pgClaimResult: the claimed jobs
// after a false flag, or one row whose flag is true when ClaimFlow must
// decide.
var pgFlowClaim = `WITH clk AS (SELECT ` + pgNow + ` AS t),
qc AS (SELECT coalesce(max(paused), 0) AS paused, coalesce(max(max_running), 0) AS qmax
	FROM {s}queue_configs WHERE queue = ?),
slow AS (SELECT (SELECT paused FROM qc) <> 0
	OR NOT EXISTS (SELECT 1 FROM {s}flow_switch WHERE seq <> 0 OR limits <> 0)
	OR EXISTS (SELECT 1 FROM {s}flow_seqs WHERE queue = ? AND ready <> 0)
	OR EXISTS (SELECT 1 FROM {s}jobs g JOIN {s}flow_counts c ON c.scope = 'k' AND c.name = g.task AND c.lkey = g.limit_key
		WHERE g.key_gate <> 0 AND c.ready <> 0)
	OR EXISTS (SELECT 1 FROM {s}jobs WHERE queue = ? AND state IN ('queued', 'sleeping') AND deadline_at IS NOT NULL
		AND run_at <= (SELECT t FROM clk) AND deadline_at <= (SELECT t FROM clk)) AS b),
cand AS MATERIALIZED (
	SELECT id, queue, task, limit_key, sequence_key FROM {s}jobs
	WHERE queue = ? {after}AND state IN ('queued', 'sleeping') AND seq_gate = 0 AND key_gate = 0
		AND run_at <= (SELECT t FROM clk) AND (deadline_at IS NULL OR deadline_at > (SELECT t FROM clk))
		AND NOT (SELECT b FROM slow)
	ORDER BY priority, run_at, id LIMIT ? FOR UPDATE SKIP LOCKED),
cfg AS (
	SELECT d.task, coalesce(c.max_running, 0) AS mr, coalesce(c.max_running_per_key, 0) AS pk,
		coalesce(c.max_starts_per_second, 0) + coalesce(c.max_starts_per_second_per_key, 0) AS rate,
		coalesce(c.max_running_per_key, 0) > 0 AND EXISTS (SELECT 1 FROM {s}flow_counts m
			WHERE m.scope = '` + keyedScope + `' AND m.name = d.task AND m.lkey = '') AS keyed
	FROM (SELECT DISTINCT task FROM cand) d LEFT JOIN {s}task_configs c ON c.task = d.task),
need AS (
	SELECT 't' AS scope, c.task AS name, '' AS lkey, count(*) AS cnt,
		least(max(CASE WHEN f.mr > 0 THEN f.mr ELSE ` + pgNoLimit + ` END),
			max(CASE WHEN f.pk > 0 AND NOT f.keyed THEN f.pk ELSE ` + pgNoLimit + ` END)) AS lim,
		bool_or(f.keyed) AS keyed, max(f.pk) AS pk
		FROM cand c JOIN cfg f ON f.task = c.task WHERE f.mr > 0 OR f.pk > 0 GROUP BY c.task
	UNION ALL SELECT 'k', c.task, c.limit_key, count(*), max(f.pk), false, 0
		FROM cand c JOIN cfg f ON f.task = c.task WHERE f.keyed AND c.limit_key IS NOT NULL GROUP BY c.task, c.limit_key
	UNION ALL SELECT 'q', min(c.queue), '', count(*), max(qc.qmax), false, 0
		FROM cand c, qc WHERE qc.qmax > 0 HAVING count(*) > 0),
cur AS (
	SELECT need.scope, need.name, need.lkey, need.cnt, need.lim, need.keyed, need.pk, coalesce(n.n, 0) AS have, coalesce(n.ready, 0) AS seen
	FROM need LEFT JOIN {s}flow_counts n ON n.scope = need.scope AND n.name = need.name AND n.lkey = need.lkey),
ok AS (SELECT NOT EXISTS (SELECT 1 FROM cand c JOIN cfg f ON f.task = c.task WHERE c.sequence_key IS NOT NULL OR f.rate > 0)
	AND NOT EXISTS (SELECT 1 FROM cur WHERE have + cnt > lim) AND NOT EXISTS (SELECT 1 FROM cur WHERE keyed AND have = 0 AND cnt <= pk) AS v),
counted AS (
	INSERT INTO {s}flow_counts (scope, name, lkey, n, ready)
	SELECT scope, name, lkey, cnt, CASE WHEN seen >= ` + pgMarksKept + ` THEN -seen ELSE 0 END FROM cur WHERE (SELECT v FROM ok) ORDER BY scope, name, lkey
	ON CONFLICT (scope, name, lkey) DO UPDATE SET n = {s}flow_counts.n + excluded.n, ready = {s}flow_counts.ready + excluded.ready),
claimed AS (
	UPDATE {s}jobs j SET ` + pgClaimSet + `
	FROM cand WHERE j.id = cand.id AND (SELECT v FROM ok)
	RETURNING j.*)
SELECT false, ` + JobCols("") + ` FROM claimed
UNION ALL SELECT true, ` + jobZeros() + ` WHERE (SELECT b FROM slow) OR NOT (SELECT v FROM ok)`

// pgFlowClaimStatement returns pgFlowClaim for req starting at st, and
// its arguments.
func pgFlowClaimStatement(req core.ClaimRequest, st cursorStart, now any) (string, []any) {
	args := []any{now, req.Queue, req.Queue, req.Queue, req.Queue}
	after := ""
	if !st.head {
		after = "AND (priority, run_at, id) > (?::integer, ?::bigint, ?::text) "
		args = append(args, st.pos.prio, st.pos.runAt, st.pos.id)
	}
	return strings.Replace(pgFlowClaim, "{after}", after, 1), append(args, req.Limit, req.WorkerID, ceilUS(req.LeaseTTL))
}

// flowClaimAlone runs pgFlowClaim without an explicit transaction, in
// pgClaimPipeline's implicit one, committed when the statement has run:
// one round trip where BEGIN, the pipeline and COMMIT are three. It is
// exact for the same reason as the pipeline inside a transaction: the
// flow lock is held before the statement takes its snapshot, and until
// the implicit transaction commits. done is false, and nothing was
// written, when the statement left the claim to ClaimFlow (its flag
// row): the caller then runs the claim again in a transaction of its
// own. Claim remembers such a queue in flowSlow and goes straight to the
// transaction for it until a statement there claims alone again, so that
// a queue whose limits bind does not pay for the statement twice.
func (e *Engine) flowClaimAlone(ctx context.Context, req core.ClaimRequest, st cursorStart, now any) (jobs []core.Job, done bool, _ error) {
	sql, args := pgFlowClaimStatement(req, st, now)
	err := e.st.WriteOne(ctx, func(q Querier) error {
		if _, ok := q.(PgxQuerier); !ok {
			// Statements sent one by one outside a transaction would
			// each commit, and the lock with them: leave it to the
			// transaction.
			return nil
		}
		var slow bool
		var err error
		jobs, slow, err = e.pgClaimPipeline(ctx, q, true, e.render(sql), args)
		done = !slow
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return jobs, done, nil
}
