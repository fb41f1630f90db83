package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/boson-go/boson/core"
)

// Flow control (see the README, "Flow control"): the jobs a rule holds
// back for a while are gated out of the claim index (seq_gate for a
// sequence, key_gate for a saturated limit key), the running counts of
// what a stored config limits live in flow_counts, the starts of
// rate-limited tasks and keys in flow_starts, and a sequence whose head
// may have changed is marked in flow_seqs. Transitions only mark: the
// claim, which runs under one lock per schema, opens the gates, so an
// opening never races a claim that is closing one.

// flowRef is what the flow bookkeeping needs of a job whose state
// changed: its task, queue and keys, and whether it was running before.
type flowRef struct {
	task, queue, limitKey, seqKey string
	wasRunning                    bool
}

// refOf returns the flowRef of j as it was before its change.
func refOf(j core.Job) flowRef {
	return flowRef{task: j.Task, queue: j.Queue, limitKey: j.LimitKey, seqKey: j.SequenceKey, wasRunning: j.State == core.StateRunning}
}

// countKey names one row of flow_counts.
type countKey struct{ scope, name, key string }

// flowAfter records, inside the transaction q, that the jobs refs
// changed state: the running counts of those that were running go down
// (only rows that exist: what a config limits), a key whose slot freed
// is marked for the next claim, and so is every sequence of refs.
func (e *Engine) flowAfter(ctx context.Context, q Querier, refs []flowRef) error {
	dec := map[countKey]int64{}
	seqs := map[[2]string]bool{}
	for _, r := range refs {
		if r.wasRunning {
			dec[countKey{"t", r.task, ""}]++
			dec[countKey{"q", r.queue, ""}]++
			if r.limitKey != "" {
				dec[countKey{"k", r.task, r.limitKey}]++
			}
		}
		if r.seqKey != "" {
			seqs[[2]string{r.queue, r.seqKey}] = true
		}
	}
	// Sequences first, then counts in key order: every transaction that
	// writes both takes their rows in that order, so none waits in a
	// cycle.
	if len(seqs) > 0 {
		if err := e.markSeqs(ctx, q, seqs); err != nil {
			return err
		}
	}
	if len(dec) == 0 {
		return nil
	}
	keys := sortedKeys(dec)
	rows := make([][]any, len(keys))
	for i, k := range keys {
		rows[i] = []any{k.scope, k.name, k.key, dec[k]}
	}
	// One statement for every row: an update of a row that does not
	// exist changes nothing. Postgres first locks the rows that exist in
	// key order, in the same statement: its UPDATE takes the table lock
	// that waits for a claim entering keyed mode (enterKeyed) before the
	// statement's snapshot is taken, so it sees the key rows that claim
	// rebuilt. SQLite's write transaction already excludes every other
	// writer.
	sql := `UPDATE {s}flow_counts SET n = n - CAST(x.d AS BIGINT),
		ready = CASE WHEN scope = 'k' THEN ready + 1 ELSE ready END
		FROM ` + e.jsonRows("sc", "nm", "lk", "d") + ` WHERE scope = x.sc AND name = x.nm AND lkey = x.lk`
	if _, ok := e.d.(Postgres); ok {
		sql = `WITH x AS (SELECT value ->> 0 AS sc, value ->> 1 AS nm, value ->> 2 AS lk, (value ->> 3)::bigint AS d
			FROM json_array_elements(CAST(? AS json))),
		locked AS (SELECT c.scope, c.name, c.lkey, x.d FROM {s}flow_counts c JOIN x ON c.scope = x.sc AND c.name = x.nm AND c.lkey = x.lk
			ORDER BY c.scope, c.name, c.lkey FOR UPDATE OF c)
		UPDATE {s}flow_counts c SET n = c.n - locked.d, ready = CASE WHEN c.scope = 'k' THEN c.ready + 1 ELSE c.ready END
		FROM locked WHERE c.scope = locked.scope AND c.name = locked.name AND c.lkey = locked.lkey`
	}
	if _, err := q.Exec(ctx, e.render(sql), jsonArg(rows)); err != nil {
		return fmt.Errorf("flow counts: %w", err)
	}
	return nil
}

// sortedKeys returns the keys of m in (scope, name, key) order.
func sortedKeys(m map[countKey]int64) []countKey {
	keys := make([]countKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		x, y := keys[a], keys[b]
		if x.scope != y.scope {
			return x.scope < y.scope
		}
		if x.name != y.name {
			return x.name < y.name
		}
		return x.key < y.key
	})
	return keys
}

// markSeqs marks sequences (queue, key) for the next claim of their
// queue, in key order.
func (e *Engine) markSeqs(ctx context.Context, q Querier, seqs map[[2]string]bool) error {
	list := make([][2]string, 0, len(seqs))
	for s := range seqs {
		list = append(list, s)
	}
	sort.Slice(list, func(a, b int) bool {
		if list[a][0] != list[b][0] {
			return list[a][0] < list[b][0]
		}
		return list[a][1] < list[b][1]
	})
	for _, s := range list {
		if _, err := q.Exec(ctx, e.render("UPDATE {s}flow_seqs SET ready = ready + 1 WHERE queue = ? AND seq = ?"), s[0], s[1]); err != nil {
			return err
		}
	}
	return nil
}

// flowRefsOf reads the flowRefs of the jobs ids (before they change).
func (e *Engine) flowRefsOf(ctx context.Context, q Querier, ids []string) ([]flowRef, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	cond, arg := e.inStrings("id", ids)
	var out []flowRef
	err := e.scanAll(ctx, q, "SELECT task, queue, coalesce(limit_key, ''), coalesce(sequence_key, ''), state FROM {s}jobs WHERE "+cond,
		[]any{arg}, func(rows Rows) error {
			var r flowRef
			var state string
			if err := rows.Scan(&r.task, &r.queue, &r.limitKey, &r.seqKey, &state); err != nil {
				return err
			}
			r.wasRunning = state == string(core.StateRunning)
			out = append(out, r)
			return nil
		})
	return out, err
}

// flowAfterIDs is flowAfter for jobs named by id, read before they change.
func (e *Engine) flowAfterIDs(ctx context.Context, q Querier, ids []string) error {
	refs, err := e.flowRefsOf(ctx, q, ids)
	if err != nil {
		return err
	}
	return e.flowAfter(ctx, q, refs)
}

// heldKey is the condition (on a job row) that the job holds its
// idempotency key; it repeats the predicate of the jobs_idempotency index.
const heldKey = `idempotency_key IS NOT NULL AND key_released = 0 AND (unique_mode <> 'while_active' OR state IN ('queued', 'running', 'sleeping'))`

// retakeKey checks, before j (failed or cancelled) is queued again, that
// no other job holds the key of a while-active j, which the retry takes
// again.
func (e *Engine) retakeKey(ctx context.Context, q Querier, j core.Job) error {
	if j.Unique != core.UniqueWhileActive || j.IdempotencyKey == "" {
		return nil
	}
	var holder string
	err := e.scanAll(ctx, q, "SELECT id FROM {s}jobs WHERE queue = ? AND idempotency_key = ? AND id <> ? AND "+heldKey,
		[]any{j.Queue, j.IdempotencyKey, j.ID}, func(rows Rows) error { return rows.Scan(&holder) })
	if err != nil {
		return err
	}
	if holder != "" {
		return fmt.Errorf("%w: key %q of queue %q is held by job %s; job %s cannot take it again",
			core.ErrIdempotencyConflict, j.IdempotencyKey, j.Queue, holder, j.ID)
	}
	return nil
}

// isUniqueViolation reports whether err is Postgres's unique_violation:
// on a retry, an enqueue that took a while-active key after retakeKey
// looked. SQLite's single writer rules that race out.
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// flowRetrySet is the SET list a retry adds: the job leaves any key gate
// and, in a sequence, waits for the next claim to open its gate.
const flowRetrySet = `, seq_hold = 0, key_gate = 0, seq_gate = CASE WHEN sequence_key IS NULL THEN 0 ELSE 1 END`

// holdOnFailure reports whether task's stored config holds the sequence
// of a job that fails terminally.
func (e *Engine) holdOnFailure(ctx context.Context, q Querier, task string) (bool, error) {
	var hold int64
	err := e.scanAll(ctx, q, "SELECT hold_sequence_on_failure FROM {s}task_configs WHERE task = ?", []any{task},
		func(rows Rows) error { return rows.Scan(&hold) })
	return hold != 0, err
}

// flowLockSQL takes the flow lock of the schema whose key it is given
// (flowLockKey); the migrations that take it spell the same key.
const flowLockSQL = "SELECT pg_advisory_xact_lock(hashtext($1))"

// flowLockKey is the flow lock's key for the engine's schema.
func (e *Engine) flowLockKey() string { return "boson.flow." + e.prefix }

// flowLock serialises, on Postgres, every flow claim and config change
// of the schema; SQLite's write transaction already does.
func (e *Engine) flowLock(ctx context.Context, q Querier) error {
	if _, ok := e.d.(Postgres); !ok {
		return nil
	}
	_, err := q.Exec(ctx, flowLockSQL, e.flowLockKey())
	return err
}

// flowSwitchOn reads whether any sequence or limit exists in the store.
func (e *Engine) flowSwitchOn(ctx context.Context, q Querier) (bool, error) {
	var on bool
	err := e.scanAll(ctx, q, "SELECT count(*) FROM {s}flow_switch WHERE seq <> 0 OR limits <> 0", nil, func(rows Rows) error {
		var n int64
		err := rows.Scan(&n)
		on = n > 0
		return err
	})
	return on, err
}

// flowSwitchSQL recomputes whether any stored config sets a limit.
const flowSwitchSQL = `UPDATE {s}flow_switch SET limits = CASE WHEN EXISTS (SELECT 1 FROM {s}task_configs
		WHERE max_running > 0 OR max_running_per_key > 0 OR max_starts_per_second > 0 OR max_starts_per_second_per_key > 0)
	OR EXISTS (SELECT 1 FROM {s}queue_configs WHERE max_running > 0) THEN 1 ELSE 0 END WHERE id = 1`

// flowLockConfig takes, inside a config change, what makes its recount
// exact on Postgres: the flow lock (no claim runs), an exclusive lock on
// flow_switch (every single-statement claim that may have read the
// switch off has ended) and a lock on flow_counts that waits for every
// transition that may have missed the rows the recount writes.
func (e *Engine) flowLockConfig(ctx context.Context, q Querier) error {
	if err := e.flowLock(ctx, q); err != nil {
		return err
	}
	if _, ok := e.d.(Postgres); !ok {
		return nil
	}
	if _, err := q.Exec(ctx, e.render("LOCK TABLE {s}flow_switch IN ACCESS EXCLUSIVE MODE")); err != nil {
		return err
	}
	_, err := q.Exec(ctx, e.render("LOCK TABLE {s}flow_counts IN SHARE ROW EXCLUSIVE MODE"))
	return err
}

// recountTask rebuilds the running counts of task for what cfg limits:
// the task's row when it has a MaxRunning or a per-key limit, and its key
// rows only when it must be in keyed mode (its running jobs already reach
// the per-key limit, so that the next claim could find a key at it). It
// opens every key gate of the task (a claim closes again those still
// saturated) and recomputes the flow switch.
func (e *Engine) recountTask(ctx context.Context, q Querier, cfg core.TaskConfig) error {
	if _, err := q.Exec(ctx, e.render("DELETE FROM {s}flow_counts WHERE scope IN ('t', 'k', '"+keyedScope+"') AND name = ?"), cfg.Task); err != nil {
		return err
	}
	if cfg.MaxRunning > 0 || cfg.MaxRunningPerKey > 0 {
		if _, err := q.Exec(ctx, e.render(`INSERT INTO {s}flow_counts (scope, name, lkey, n)
			SELECT 't', ?, '', count(*) FROM {s}jobs WHERE task = ? AND state = 'running'`), cfg.Task, cfg.Task); err != nil {
			return err
		}
	}
	if cfg.MaxRunningPerKey > 0 {
		var n int64
		if err := e.scanAll(ctx, q, "SELECT n FROM {s}flow_counts WHERE scope = 't' AND name = ? AND lkey = ''", []any{cfg.Task},
			func(rows Rows) error { return rows.Scan(&n) }); err != nil {
			return err
		}
		if n >= int64(cfg.MaxRunningPerKey) {
			if err := e.buildKeyRows(ctx, q, cfg.Task); err != nil {
				return err
			}
		}
	}
	if _, err := q.Exec(ctx, e.render("UPDATE {s}jobs SET key_gate = 0 WHERE task = ? AND limit_key IS NOT NULL AND key_gate <> 0"), cfg.Task); err != nil {
		return err
	}
	_, err := q.Exec(ctx, e.render(flowSwitchSQL))
	return err
}

// Keyed mode. A task's per-key running counts ('k' rows) are kept only
// while the task is in keyed mode, which its marker row (keyedScope,
// task, '') says. Outside it, no key of the task can be at its limit:
// the task's own running count (its 't' row, kept for every task with a
// MaxRunning or a per-key limit) is below the per-key limit, and bounds
// every key's. A claim that would take the task's count past the per-key
// limit first enters keyed mode (enterKeyed); a claim that finds a keyed
// task running nothing leaves it (leaveKeyed). Transitions decrement
// only rows that exist, so outside keyed mode they write no key row.

// keyedScope is the scope of the marker row of a task in keyed mode.
const keyedScope = "m"

// errNeedKeyed is what a Postgres flow claim returns, to be retried in a
// new transaction, when a task must enter keyed mode once the claim has
// locked jobs: entering waits for a table lock, which the claim takes
// only while it holds no job's row lock (a transition waiting for one of
// those while holding the table's row locks would deadlock with it).
type errNeedKeyed struct{ task string }

func (e errNeedKeyed) Error() string { return "flow claim: task " + e.task + " must enter keyed mode" }

// buildKeyRows puts task in keyed mode with its key rows counted from the
// jobs: the caller has made the count exact (the flow lock and, on
// Postgres, the lock on flow_counts that waits for every transition that
// wrote it).
func (e *Engine) buildKeyRows(ctx context.Context, q Querier, task string) error {
	if _, err := q.Exec(ctx, e.render("DELETE FROM {s}flow_counts WHERE scope IN ('k', '"+keyedScope+"') AND name = ?"), task); err != nil {
		return err
	}
	if _, err := q.Exec(ctx, e.render(`INSERT INTO {s}flow_counts (scope, name, lkey, n)
		SELECT 'k', task, limit_key, count(*) FROM {s}jobs WHERE task = ? AND state = 'running' AND limit_key IS NOT NULL
		GROUP BY task, limit_key`), task); err != nil {
		return err
	}
	_, err := q.Exec(ctx, e.render("INSERT INTO {s}flow_counts (scope, name, lkey, n) VALUES ('"+keyedScope+"', ?, '', 0)"), task)
	return err
}

// enterKeyed puts task in keyed mode inside a flow claim, which holds the
// flow lock (no claim or config change runs). On Postgres it first takes
// the lock on flow_counts that a config change takes: every transition
// that decremented the task's count has committed, and every later one
// takes its statement's snapshot after this transaction commits, so it
// sees the key rows and decrements them. It must hold no job's row lock.
// A task already in keyed mode keeps its rows, and their marks.
func (e *Engine) enterKeyed(ctx context.Context, q Querier, task string) error {
	var keyed int64
	if err := e.scanAll(ctx, q, "SELECT count(*) FROM {s}flow_counts WHERE scope = '"+keyedScope+"' AND name = ? AND lkey = ''", []any{task},
		func(rows Rows) error { return rows.Scan(&keyed) }); err != nil || keyed != 0 {
		return err
	}
	if _, ok := e.d.(Postgres); ok {
		if _, err := q.Exec(ctx, e.render("LOCK TABLE {s}flow_counts IN SHARE ROW EXCLUSIVE MODE")); err != nil {
			return err
		}
	}
	return e.buildKeyRows(ctx, q, task)
}

// leaveKeyed takes task out of keyed mode inside a flow claim, which has
// read under the flow lock that the task runs nothing: every transition
// of its running jobs has committed, and no claim runs meanwhile, so no
// one writes its key rows. Every key is free, so every key gate of the
// task opens (the marks that would have opened them go with the rows).
func (e *Engine) leaveKeyed(ctx context.Context, q Querier, task string) error {
	if _, err := q.Exec(ctx, e.render("DELETE FROM {s}flow_counts WHERE scope IN ('k', '"+keyedScope+"') AND name = ?"), task); err != nil {
		return err
	}
	_, err := q.Exec(ctx, e.render("UPDATE {s}jobs SET key_gate = 0 WHERE task = ? AND limit_key IS NOT NULL AND key_gate <> 0"), task)
	return err
}

// recountQueue rebuilds the running count of a queue when cfg limits it.
func (e *Engine) recountQueue(ctx context.Context, q Querier, cfg core.QueueConfig) error {
	if _, err := q.Exec(ctx, e.render("DELETE FROM {s}flow_counts WHERE scope = 'q' AND name = ?"), cfg.Queue); err != nil {
		return err
	}
	if cfg.MaxRunning > 0 {
		if _, err := q.Exec(ctx, e.render(`INSERT INTO {s}flow_counts (scope, name, lkey, n)
			SELECT 'q', ?, '', count(*) FROM {s}jobs WHERE queue = ? AND state = 'running'`), cfg.Queue, cfg.Queue); err != nil {
			return err
		}
	}
	_, err := q.Exec(ctx, e.render(flowSwitchSQL))
	return err
}

// RunningByKey implements core.FlowController by counting the running
// jobs of task per limit key (through jobs_task).
func (e *Engine) RunningByKey(ctx context.Context, task string, limit int) ([]core.KeyCount, error) {
	if err := e.check("running by key"); err != nil {
		return nil, err
	}
	if err := core.ValidateRunningByKey(task, limit); err != nil {
		return nil, err
	}
	if limit == 0 {
		limit = core.DefaultPageSize
	}
	var out []core.KeyCount
	err := e.scanAll(ctx, e.st.Reader(), `SELECT limit_key, count(*) FROM {s}jobs WHERE task = ? AND state = 'running' AND limit_key IS NOT NULL
		GROUP BY limit_key ORDER BY count(*) DESC, limit_key LIMIT ?`, []any{task, limit}, func(rows Rows) error {
		var k core.KeyCount
		if err := rows.Scan(&k.Key, &k.Running); err != nil {
			return err
		}
		out = append(out, k)
		return nil
	})
	if err != nil {
		return nil, e.wrap("running by key", err)
	}
	if out == nil {
		out = []core.KeyCount{}
	}
	return out, nil
}

var _ core.FlowController = (*Engine)(nil)

// jsonPairs encodes [job id, run id] pairs.
func jsonPairs(pairs [][2]string) string {
	b, _ := json.Marshal(pairs)
	return string(b)
}

// keyExpiresUS is when a by-period job's key is free: the end of its
// window (PeriodEnd of its creation), in microseconds; 0 in other modes.
func keyExpiresUS(j core.Job) int64 {
	if j.Unique != core.UniqueByPeriod || j.UniquePeriod <= 0 {
		return 0
	}
	return toUS(core.PeriodEnd(j.CreatedAt, j.UniquePeriod))
}

// seqGate is the gate a new job starts with: closed in a sequence (the
// next claim opens it for the head), open otherwise.
func seqGate(j core.Job) int {
	if j.SequenceKey != "" {
		return 1
	}
	return 0
}

// releasePeriods frees, before an insert, the keys of the batch that
// by-period jobs hold past the end of their window.
func (e *Engine) releasePeriods(ctx context.Context, q Querier, jobs []core.Job, now int64) error {
	var conds []string
	var args []any
	args = append(args, now)
	for _, j := range jobs {
		if j.IdempotencyKey != "" {
			conds = append(conds, "(queue = ? AND idempotency_key = ?)")
			args = append(args, j.Queue, j.IdempotencyKey)
		}
	}
	if len(conds) == 0 {
		return nil
	}
	for start := 0; start < len(conds); start += 200 {
		end := min(start+200, len(conds))
		a := append([]any{now}, args[1+2*start:1+2*end]...)
		if _, err := q.Exec(ctx, e.render(`UPDATE {s}jobs SET key_released = 1 WHERE unique_mode = 'by_period' AND key_expires_at <= ? AND `+
			heldKey+` AND (`+strings.Join(conds[start:end], " OR ")+")"), a...); err != nil {
			return err
		}
	}
	return nil
}

// markNewSeqs turns the flow switch on and marks the sequences of the new
// jobs of a batch, so that the next claim opens the gate of each head.
func (e *Engine) markNewSeqs(ctx context.Context, q Querier, jobs []core.Job, inserted map[string]bool) error {
	seqs := map[[2]string]bool{}
	for _, j := range jobs {
		if j.SequenceKey != "" && inserted[j.ID] {
			seqs[[2]string{j.Queue, j.SequenceKey}] = true
		}
	}
	if len(seqs) == 0 {
		return nil
	}
	if _, err := q.Exec(ctx, e.render("UPDATE {s}flow_switch SET seq = 1 WHERE id = 1 AND seq = 0")); err != nil {
		return err
	}
	for s := range seqs {
		if _, err := q.Exec(ctx, e.render(`INSERT INTO {s}flow_seqs (queue, seq, ready) VALUES (?, ?, 1)
			ON CONFLICT (queue, seq) DO UPDATE SET ready = {s}flow_seqs.ready + 1`), s[0], s[1]); err != nil {
			return err
		}
	}
	return nil
}

// boolInt stores a flag as 0 or 1.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// retakeKeys drops from ids (jobs a bulk retry queues again) every
// while-active job whose key another job holds, which the per-job Retry
// refuses, and records it as failed.
func (e *Engine) retakeKeys(ctx context.Context, q Querier, ids []string, eff *bulkEffects) ([]string, error) {
	cond, arg := e.inStrings("j.id", ids)
	refused := map[string]string{}
	err := e.scanAll(ctx, q, `SELECT j.id, j.idempotency_key FROM {s}jobs j WHERE `+cond+` AND j.unique_mode = 'while_active' AND j.idempotency_key IS NOT NULL
		AND EXISTS (SELECT 1 FROM {s}jobs h WHERE h.queue = j.queue AND h.idempotency_key = j.idempotency_key AND h.id <> j.id
			AND h.key_released = 0 AND (h.unique_mode <> 'while_active' OR h.state IN ('queued', 'running', 'sleeping')))`,
		[]any{arg}, func(rows Rows) error {
			var id, key string
			err := rows.Scan(&id, &key)
			refused[id] = key
			return err
		})
	if err != nil || len(refused) == 0 {
		return ids, err
	}
	out := ids[:0:0]
	for _, id := range ids {
		key, ok := refused[id]
		if !ok {
			out = append(out, id)
			continue
		}
		eff.failed = append(eff.failed, core.BulkError{JobID: id,
			Error: fmt.Sprintf("%v: key %q is held by another job", core.ErrIdempotencyConflict, key)})
	}
	eff.changed -= len(refused)
	return out, nil
}
