package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/boson-go/boson/core"
)

// Fan-in. A waiting job keeps the counters of its latest wait on its own
// row (wait_token, the lease token of the run that began the wait;
// wait_total, wait_pending, wait_any, wait_woken, wait_cc) and the request
// in job_waits. An awaited job lists its waits in awaited_by, one
// "token:waiter id" entry each: a job with none pays one NULL test per
// terminal transition. A transition of an awaited job counts it, in the
// same statement or transaction, on the row of each waiter whose wait
// still has the entry's token, and wakes the waiter (run_at = now) when
// that count satisfies a wait that is current: the waiter is sleeping
// under the wait's token and was not woken yet. The entries stay on the
// awaited job once it is terminal (a later delete of a terminal job
// counts nothing) and a Retry clears them, so a job counts once per wait.

var _ core.Awaiter = (*Engine)(nil)

// terminalStates is the SQL list of the states that end a job.
const terminalStates = "('succeeded', 'failed', 'cancelled')"

// awaitRetrySet is the SET list a retry adds: a job queued again is
// counted by no wait that counted it already.
const awaitRetrySet = `, awaited_by = NULL`

// waitSet is the SET list that counts d.n awaited jobs of the wait of
// token d.tok on the waiter's row, and wakes the waiter at {t} when that
// satisfies a wait that is current and not woken. Every column it reads
// is the row's latest version under its lock, never a snapshot.
const waitSet = `wait_pending = CASE WHEN w.wait_token = d.tok THEN w.wait_pending - d.n ELSE w.wait_pending END,
	wait_woken = CASE WHEN {wake} THEN 1 ELSE w.wait_woken END,
	run_at = CASE WHEN {wake} THEN {t} ELSE w.run_at END`

// waitWake is the condition of waitSet's wake.
const waitWake = `(w.wait_token = d.tok AND w.wait_woken = 0 AND w.state = 'sleeping' AND w.token = d.tok
	AND (CASE WHEN w.wait_any <> 0 THEN w.wait_pending - d.n < w.wait_total ELSE w.wait_pending - d.n <= 0 END))`

// waitWhere selects the waiter rows that waitSet may change: by id, and
// only for an entry not older than the waiter's latest wait. The filter
// holds on the snapshot's version whenever it holds on the latest one
// (tokens only grow), so Postgres re-checks it on the latest version.
const waitWhere = `w.id = d.wid AND w.wait_token <= d.tok`

// waitWoken is true on a waiter row that waitSet just woke at {t}.
const waitWoken = `(w.wait_woken <> 0 AND w.state = 'sleeping' AND w.run_at = {t})`

// waitSQL expands a wait fragment for the time expression t.
func waitSQL(frag, t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(frag, "{wake}", waitWake), "{t}", t)
}

// edge is one "token:waiter id" entry of awaited_by.
type edge struct {
	tok int64
	wid string
}

// parseEdge decodes an awaited_by entry.
func parseEdge(s string) (edge, bool) {
	t, id, ok := strings.Cut(s, ":")
	if !ok {
		return edge{}, false
	}
	tok, err := strconv.ParseInt(t, 10, 64)
	return edge{tok: tok, wid: id}, err == nil
}

// AwaitJobs implements core.Awaiter in one write transaction. It locks
// the awaited jobs in id order before the waiting job, as a transition
// of an awaited job locks it before its waiters.
func (e *Engine) AwaitJobs(ctx context.Context, req core.AwaitRequest) (core.AwaitResult, error) {
	if err := e.check("await"); err != nil {
		return core.AwaitResult{}, err
	}
	if err := core.ValidateAwait(req); err != nil {
		return core.AwaitResult{}, err
	}
	ordered, err := json.Marshal(req.JobIDs)
	if err != nil {
		return core.AwaitResult{}, err
	}
	sorted := slices.Sorted(slices.Values(req.JobIDs))
	var res core.AwaitResult
	var due dueJob
	var nowUS int64
	err = e.st.WriteTx(ctx, func(q Querier) error {
		res = core.AwaitResult{}
		cond, arg := e.inStrings("id", sorted)
		found := make(map[string]bool, len(sorted))
		var open []string
		if err := e.scanAll(ctx, q, "SELECT id, state FROM {s}jobs WHERE "+cond+" ORDER BY id"+e.d.LockRows(), []any{arg},
			func(rows Rows) error {
				var id, state string
				if err := rows.Scan(&id, &state); err != nil {
					return err
				}
				found[id] = true
				if !core.JobState(state).Terminal() {
					open = append(open, id)
				}
				return nil
			}); err != nil {
			return err
		}
		j, now, err := e.lockFenced(ctx, q, req.Lease)
		if err != nil {
			return err
		}
		nowUS = now
		for _, id := range req.JobIDs {
			if !found[id] {
				return fmt.Errorf("%w: awaited job %s does not exist", core.ErrNotFound, id)
			}
		}
		if err := e.endRun(ctx, q, j, core.RunSleeping, now, ""); err != nil {
			return err
		}
		total, pending := len(req.JobIDs), len(open)
		woken := req.Mode.Satisfied(total, pending)
		runAt := max(toUS(req.WakeAt()), now)
		if woken {
			runAt = now
		}
		token := req.Lease.Token
		if _, err := q.Exec(ctx, e.render(`UPDATE {s}jobs SET state = 'sleeping', run_at = ?, wait_token = ?, wait_total = ?,
			wait_pending = ?, wait_any = ?, wait_woken = ?, wait_cc = ? WHERE id = ?`),
			runAt, token, total, pending, boolInt(req.Mode == core.AwaitAny), boolInt(woken), boolInt(req.CancelChildren), j.ID); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, e.render(`INSERT INTO {s}job_waits (job_id, token, mode, until_at, cancel_children, job_ids)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (job_id) DO UPDATE SET token = excluded.token, mode = excluded.mode,
			until_at = excluded.until_at, cancel_children = excluded.cancel_children, job_ids = excluded.job_ids`),
			j.ID, token, string(req.Mode), toUS(req.Until), boolInt(req.CancelChildren), string(ordered)); err != nil {
			return err
		}
		if len(open) > 0 {
			entry := strconv.FormatInt(token, 10) + ":" + j.ID
			cond, arg := e.inStrings("id", open)
			set := "json_insert(coalesce(awaited_by, '[]'), '$[#]', ?)"
			if _, ok := e.d.(Postgres); ok {
				set = "array_append(awaited_by, ?::text)"
			}
			if _, err := q.Exec(ctx, e.render("UPDATE {s}jobs SET awaited_by = "+set+" WHERE "+cond), entry, arg); err != nil {
				return err
			}
		}
		if err := e.flowAfter(ctx, q, []flowRef{refOf(j)}); err != nil {
			return err
		}
		res = core.AwaitResult{Pending: pending, Woken: woken}
		due = dueJob{queue: j.Queue, prio: j.Priority, runAt: runAt}
		return e.d.Notify(ctx, e, q, []string{due.payload()})
	})
	if err != nil {
		return core.AwaitResult{}, e.wrap("await", err)
	}
	e.cursors.noteDue(due)
	if due.runAt <= nowUS {
		e.hub.signal(due.queue)
	}
	return res, nil
}

// JobWait implements core.Awaiter: the request from job_waits, the
// counters from the job's row.
func (e *Engine) JobWait(ctx context.Context, jobID string) (core.Wait, error) {
	if err := e.check("job wait"); err != nil {
		return core.Wait{}, err
	}
	if !plausibleID(jobID) {
		return core.Wait{}, fmt.Errorf("boson/%s: job wait: %w: job %q", e.d.Name(), core.ErrNotFound, jobID)
	}
	var w core.Wait
	var found bool
	err := e.scanAll(ctx, e.st.Reader(), `SELECT w.token, w.mode, w.until_at, w.cancel_children, w.job_ids, j.wait_pending, j.wait_woken
		FROM {s}job_waits w JOIN {s}jobs j ON j.id = w.job_id WHERE w.job_id = ?`, []any{jobID}, func(rows Rows) error {
		var mode, ids string
		var until int64
		var cc, woken int
		if err := rows.Scan(&w.Token, &mode, &until, &cc, &ids, &w.Pending, &woken); err != nil {
			return err
		}
		found = true
		w.JobID, w.Mode, w.Until, w.CancelChildren, w.Woken = jobID, core.AwaitMode(mode), fromUS(until), cc != 0, woken != 0
		return json.Unmarshal([]byte(ids), &w.JobIDs)
	})
	if err != nil {
		return core.Wait{}, e.wrap("job wait", err)
	}
	if !found {
		return core.Wait{}, fmt.Errorf("boson/%s: job wait: %w: job %s has no wait", e.d.Name(), core.ErrNotFound, jobID)
	}
	return w, nil
}

// countAwaited counts the jobs ids, which just reached a terminal state
// in the transaction q (or, with deleting, are about to be deleted by
// it: those already terminal were counted then), on their waiters' rows,
// and wakes the waiters whose current wait that satisfies at now (zero:
// the decision time, read when needed). It costs one indexed read when
// no job of ids is awaited.
func (e *Engine) countAwaited(ctx context.Context, q Querier, ids []string, now int64, deleting bool) error {
	if len(ids) == 0 {
		return nil
	}
	cond, arg := e.inStrings("id", ids)
	sql := "SELECT awaited_by FROM {s}jobs WHERE " + cond + " AND awaited_by IS NOT NULL"
	if deleting {
		sql += " AND state NOT IN " + terminalStates
	}
	_, pg := e.d.(Postgres)
	// Per waiter, the entries of its newest wait among them: older ones
	// belong to waits it left, which count nothing.
	best := map[string]edge{}
	counts := map[string]int64{}
	add := func(s string) {
		ed, ok := parseEdge(s)
		if !ok {
			return
		}
		if b, seen := best[ed.wid]; !seen || ed.tok > b.tok {
			best[ed.wid], counts[ed.wid] = ed, 0
		} else if ed.tok < b.tok {
			return
		}
		counts[ed.wid]++
	}
	if err := e.scanAll(ctx, q, sql, []any{arg}, func(rows Rows) error {
		if pg {
			var list []string
			if err := rows.Scan(&list); err != nil {
				return err
			}
			for _, s := range list {
				add(s)
			}
			return nil
		}
		var raw string
		if err := rows.Scan(&raw); err != nil {
			return err
		}
		var list []string
		if err := json.Unmarshal([]byte(raw), &list); err != nil {
			return fmt.Errorf("awaited_by %q: %w", raw, err)
		}
		for _, s := range list {
			add(s)
		}
		return nil
	}); err != nil || len(best) == 0 {
		return err
	}
	if now == 0 {
		var err error
		if now, err = e.now(ctx, q); err != nil {
			return err
		}
	}
	wids := make([]string, 0, len(best))
	for id := range best {
		wids = append(wids, id)
	}
	slices.Sort(wids) // the lock order of the waiters
	toks, ns := make([]int64, len(wids)), make([]int64, len(wids))
	for i, id := range wids {
		toks[i], ns[i] = best[id].tok, counts[id]
	}
	var src string
	var args []any
	if pg {
		src = "unnest(?::text[], ?::int8[], ?::int8[]) AS d(wid, tok, n)"
		args = []any{now, wids, toks, ns, now}
	} else {
		rows := make([][3]any, len(wids))
		for i := range wids {
			rows[i] = [3]any{wids[i], toks[i], ns[i]}
		}
		b, err := json.Marshal(rows)
		if err != nil {
			return err
		}
		src = "(SELECT value ->> 0 AS wid, value ->> 1 AS tok, value ->> 2 AS n FROM json_each(?)) AS d"
		args = []any{now, string(b), now}
	}
	var woke []dueJob
	if err := e.scanAll(ctx, q, `UPDATE {s}jobs AS w SET `+waitSQL(waitSet, "?")+` FROM `+src+` WHERE `+waitWhere+`
		RETURNING queue, priority, run_at, `+strings.ReplaceAll(waitSQL(waitWoken, "?"), "w.", ""), args, func(rows Rows) error {
		var d dueJob
		var woken bool
		if err := rows.Scan(&d.queue, &d.prio, &d.runAt, &woken); err != nil {
			return err
		}
		if woken {
			woke = append(woke, d)
		}
		return nil
	}); err != nil || len(woke) == 0 {
		return err
	}
	return e.announceWoken(ctx, q, woke)
}

// announceWoken queues the store's notification of woken waiters on q
// and, where the store signals only in this process, their local
// wake-ups after the commit.
func (e *Engine) announceWoken(ctx context.Context, q Querier, woke []dueJob) error {
	payloads := make([]string, len(woke))
	for i, d := range woke {
		payloads[i] = d.payload()
	}
	afterCommit(q, func() {
		for _, d := range woke {
			e.cursors.noteDue(d)
			e.hub.signal(d.queue)
		}
	})
	return e.d.Notify(ctx, e, q, payloads)
}

// ccWaits returns, per waiter, the awaited jobs of the current waits with
// CancelChildren among the jobs that match cond (on alias j), read
// before those jobs are cancelled.
func (e *Engine) ccWaits(ctx context.Context, q Querier, cond string, args []any) (map[string][]string, error) {
	out := map[string][]string{}
	err := e.scanAll(ctx, q, `SELECT j.id, w.job_ids FROM {s}jobs j JOIN {s}job_waits w ON w.job_id = j.id
		WHERE `+cond+` AND j.state = 'sleeping' AND j.wait_cc <> 0 AND j.wait_token = j.token AND w.token = j.token`, args,
		func(rows Rows) error {
			var waiter, raw string
			if err := rows.Scan(&waiter, &raw); err != nil {
				return err
			}
			var ids []string
			if err := json.Unmarshal([]byte(raw), &ids); err != nil {
				return fmt.Errorf("wait job ids %q: %w", raw, err)
			}
			out[waiter] = ids
			return nil
		})
	return out, err
}

// ccChildren is ccWaits' awaited jobs of every waiter, once each, in id
// order.
func (e *Engine) ccChildren(ctx context.Context, q Querier, cond string, args []any) ([]string, error) {
	waits, err := e.ccWaits(ctx, q, cond, args)
	return childrenOf(waits, nil), err
}

// childrenOf returns the awaited jobs of waits (of the waiters in only,
// when set), once each, in id order.
func childrenOf(waits map[string][]string, only map[string]bool) []string {
	seen := map[string]bool{}
	var out []string
	for waiter, ids := range waits {
		if only != nil && !only[waiter] {
			continue
		}
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out
}

// cancelChildren cancels, in id order, those of the jobs ids that are
// not terminal, each as Cancel does (so that their own waits count and
// cascade), with a reason that names the cancelled waiter.
func (e *Engine) cancelChildren(ctx context.Context, q Querier, ids []string, now int64) error {
	if len(ids) == 0 {
		return nil
	}
	cond, arg := e.inStrings("id", ids)
	jobs, err := collectJobs(q.Query(ctx, e.render("SELECT "+JobCols("")+" FROM {s}jobs WHERE "+cond+
		" AND state NOT IN "+terminalStates+" ORDER BY id"+e.d.LockRows()), arg))
	if err != nil {
		return err
	}
	queues := []string{}
	for _, c := range jobs {
		if _, err := e.cancelJob(ctx, q, c, now, "cancelled with the job that awaited it"); err != nil {
			return err
		}
		if !slices.Contains(queues, c.Queue) {
			queues = append(queues, c.Queue)
		}
	}
	if len(queues) == 0 {
		return nil
	}
	afterCommit(q, func() {
		for _, name := range queues {
			e.hub.signal(name)
		}
	})
	return e.d.Notify(ctx, e, q, queues)
}

// afterCommit runs f once the engine's own write transaction q commits;
// in a caller's transaction it does nothing (the caller wakes local
// subscribers, as CancelIn says).
func afterCommit(q Querier, f func()) {
	switch q := q.(type) {
	case SQLQuerier:
		if q.After != nil {
			*q.After = append(*q.After, f)
		}
	case PgxQuerier:
		if q.After != nil {
			*q.After = append(*q.After, f)
		}
	}
}
