package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/boson-go/boson/core"
)

// flowCfg is what the claim needs of a task's config, and whether the
// task is in keyed mode (its key rows exist).
type flowCfg struct {
	maxRunning, perKey, rate, rateKey int64
	keyed                             bool
}

// counted reports whether the task's running count (its 't' row) is kept.
func (c *flowCfg) counted() bool { return c.maxRunning > 0 || c.perKey > 0 }

// flowClaim is the state of one flow claim.
type flowClaim struct {
	e      *Engine
	q      Querier
	now    int64
	sec    int64
	cfgs   map[string]*flowCfg
	counts map[countKey]int64
	starts map[countKey]int64
	// seen holds the marks the claim consumed (flow_seqs.ready of the
	// queue's sequences, flow_counts.ready of keys), which it takes off
	// at the end: marks added meanwhile stay for the next claim.
	seenSeqs map[string]int64
	seenKeys map[countKey]int64
	// opened counts the jobs whose gates the claim opened.
	opened int64
	// mayEnter says that the claim may put a task in keyed mode where
	// it finds one must be (SQLite, or Postgres before it locks a job);
	// otherwise it returns errNeedKeyed. keep holds the tasks that
	// entered at the claim's start, which it does not leave; looked the
	// tasks whose leaving it has considered.
	mayEnter bool
	keep     map[string]bool
	looked   map[string]bool
}

// claimFlowPickSQL reads due, ungated jobs of a queue in claim order,
// optionally after a position, leaving out the jobs of skip tasks; its
// arguments are queue, now (twice) [, priority, run_at, id], one per
// skip task, and limit.
func (e *Engine) claimFlowPickSQL(after bool, skip int) string {
	idx := ""
	if _, ok := e.d.(SQLite); ok {
		idx = " INDEXED BY jobs_claim"
	}
	pos := ""
	if after {
		pos = " AND (priority, run_at, id) > (CAST(? AS INTEGER), CAST(? AS BIGINT), CAST(? AS TEXT))"
	}
	if skip > 0 {
		pos += " AND task NOT IN (" + strings.TrimSuffix(strings.Repeat("CAST(? AS TEXT), ", skip), ", ") + ")"
	}
	return "SELECT " + JobCols("") + " FROM {s}jobs" + idx + ` WHERE queue = ? AND state IN ('queued', 'sleeping') AND seq_gate = 0 AND key_gate = 0
		AND run_at <= ? AND (deadline_at IS NULL OR deadline_at > ?)` + pos + " ORDER BY priority, run_at, id LIMIT ?" + e.d.SkipLocked()
}

// maxClaimSkip bounds how many held tasks one claim leaves out in the
// store; the walk still checks the jobs of any others itself.
const maxClaimSkip = 64

// pickArgs are the arguments of claimFlowPickSQL.
func pickArgs(queue string, now int64, last *claimPos, skip []string, page int) []any {
	args := []any{queue, now, now}
	if last != nil {
		args = append(args, last.prio, last.runAt, last.id)
	}
	for _, t := range skip {
		args = append(args, t)
	}
	return append(args, page)
}

// ClaimFlow is the claim when flow control is on, inside the write
// transaction q, at now: it cancels the due jobs past a deadline, opens
// the gates of sequences and keys that transitions marked, then walks
// the ungated due jobs in claim order and hands out those that no limit,
// start rate or sequence holds back. A job held back by a saturated key
// or by its sequence is gated, so that no later claim walks it until a
// slot frees or its sequence moves.
func (e *Engine) ClaimFlow(ctx context.Context, q Querier, req core.ClaimRequest, now int64) ([]core.Job, error) {
	jobs, _, err := e.claimFlow(ctx, q, req, now, nil, nil)
	return jobs, err
}

// newFlowClaim returns the empty state of a flow claim in q at now.
func (e *Engine) newFlowClaim(q Querier, now int64) *flowClaim {
	_, sqlite := e.d.(SQLite)
	return &flowClaim{e: e, q: q, now: now, sec: floorDiv(now, 1_000_000), cfgs: map[string]*flowCfg{},
		counts: map[countKey]int64{}, starts: map[countKey]int64{}, seenSeqs: map[string]int64{}, seenKeys: map[countKey]int64{},
		mayEnter: sqlite, keep: map[string]bool{}, looked: map[string]bool{}}
}

// claimFlow is ClaimFlow starting the walk at the claim cursor after
// (nil or a head start: the head of the index). It reports whether the
// cursor may move past what the claim walked: false when it opened
// gates (the opened jobs may sit behind the cursor; the walk then starts
// at the head) or passed over a job without gating it. keep lists the
// tasks that entered keyed mode at the start of the transaction, before
// it locked any job (Postgres); the claim leaves none of them.
func (e *Engine) claimFlow(ctx context.Context, q Querier, req core.ClaimRequest, now int64, after *cursorStart, keep []string) (_ []core.Job, clean bool, _ error) {
	if err := e.flowLock(ctx, q); err != nil {
		return nil, false, err
	}
	clean = true
	fc := e.newFlowClaim(q, now)
	for _, t := range keep {
		fc.keep[t] = true
	}
	expired, err := fc.expire(ctx, req.Queue)
	if err != nil {
		return nil, false, err
	}
	if err := fc.openSequences(ctx, req.Queue, expired); err != nil {
		return nil, false, err
	}
	if err := fc.openKeys(ctx); err != nil {
		return nil, false, err
	}
	if fc.opened > 0 {
		clean, after = false, nil
	}
	var paused, qmax int64
	if err := e.scanAll(ctx, q, "SELECT paused, max_running FROM {s}queue_configs WHERE queue = ?", []any{req.Queue},
		func(rows Rows) error { return rows.Scan(&paused, &qmax) }); err != nil {
		return nil, false, err
	}
	if paused != 0 {
		return nil, clean, fc.count(ctx, req.Queue, nil, false)
	}
	qkey := countKey{"q", req.Queue, ""}
	if qmax > 0 {
		if err := fc.loadCounts(ctx, []countKey{qkey}); err != nil {
			return nil, false, err
		}
		if fc.counts[qkey] >= qmax {
			return nil, clean, fc.count(ctx, req.Queue, nil, false)
		}
	}
	var chosen []core.Job
	var gateKey, gateSeq []string
	seqTaken := map[[2]string]bool{}
	page := max(2*req.Limit, 100)
	var last *claimPos
	if after != nil && !after.head {
		last = &after.pos
	}
	// skip holds the tasks that a walked job found at their running limit
	// or out of starts in this second. Counts only grow while the claim
	// walks, so the rest of the walk can pass over their jobs in the
	// store: without this, one saturated task with a long backlog made
	// each claim read its whole backlog, page by page.
	var skip []string
	hold := func(task string) {
		clean = false
		if len(skip) < maxClaimSkip && !slices.Contains(skip, task) {
			skip = append(skip, task)
		}
	}
	for {
		picked, err := collectJobs(q.Query(ctx, e.render(e.claimFlowPickSQL(last != nil, len(skip))), pickArgs(req.Queue, now, last, skip, page)...))
		if err != nil {
			return nil, false, err
		}
		if err := fc.load(ctx, picked); err != nil {
			return nil, false, err
		}
		stop := false
		for i := range picked {
			j := picked[i]
			if qmax > 0 && fc.counts[qkey] >= qmax {
				stop = true
				break
			}
			c := fc.cfgs[j.Task]
			tk, kk := countKey{"t", j.Task, ""}, countKey{"k", j.Task, j.LimitKey}
			if c.maxRunning > 0 && fc.counts[tk] >= c.maxRunning {
				hold(j.Task)
				continue
			}
			if j.LimitKey != "" && c.perKey > 0 && !c.keyed && fc.counts[tk] >= c.perKey {
				// The task's count no longer bounds its keys below the
				// limit: count them exactly.
				if err := fc.enter(ctx, j.Task, picked[i:]); err != nil {
					return nil, false, err
				}
			}
			if j.LimitKey != "" && c.perKey > 0 && c.keyed && fc.counts[kk] >= c.perKey {
				gateKey = append(gateKey, j.ID)
				continue
			}
			if c.rate > 0 && fc.starts[tk] >= c.rate {
				hold(j.Task)
				continue
			}
			if j.LimitKey != "" && c.rateKey > 0 && fc.starts[kk] >= c.rateKey {
				clean = false
				continue
			}
			if j.SequenceKey != "" {
				sk := [2]string{j.Queue, j.SequenceKey}
				if seqTaken[sk] {
					clean = false
					continue
				}
				ok, err := fc.sequenceHead(ctx, j)
				if err != nil {
					return nil, false, err
				}
				if !ok {
					gateSeq = append(gateSeq, j.ID)
					continue
				}
				seqTaken[sk] = true
			}
			chosen = append(chosen, j)
			if c.counted() {
				fc.counts[tk]++
			}
			if j.LimitKey != "" && c.perKey > 0 {
				// Outside keyed mode this counts only the claim's own jobs,
				// which enter adds to the stored count.
				fc.counts[kk]++
			}
			if qmax > 0 {
				fc.counts[qkey]++
			}
			if c.rate > 0 {
				fc.starts[tk]++
			}
			if j.LimitKey != "" && c.rateKey > 0 {
				fc.starts[kk]++
			}
			if len(chosen) == req.Limit {
				stop = true
				break
			}
		}
		if stop || len(picked) < page {
			break
		}
		l := picked[len(picked)-1]
		last = &claimPos{prio: l.Priority, runAt: toUS(l.RunAt), id: l.ID}
	}
	if fc.opened > 0 {
		// Leaving keyed mode opened gates during the walk.
		clean = false
	}
	if err := fc.gate(ctx, "key_gate", gateKey); err != nil {
		return nil, false, err
	}
	if err := fc.gate(ctx, "seq_gate", gateSeq); err != nil {
		return nil, false, err
	}
	if err := fc.count(ctx, req.Queue, chosen, qmax > 0); err != nil {
		return nil, false, err
	}
	if len(chosen) == 0 {
		return nil, clean, nil
	}
	jobs, err := e.markClaimed(ctx, q, req, now, chosen)
	return jobs, clean, err
}

// markClaimed marks picked jobs running under new leases, as ClaimSQL
// does, and returns them as stored.
func (e *Engine) markClaimed(ctx context.Context, q Querier, req core.ClaimRequest, now int64, jobs []core.Job) ([]core.Job, error) {
	pairs := make([][2]string, len(jobs))
	expires := now + ceilUS(req.LeaseTTL)
	for i := range jobs {
		j := &jobs[i]
		if j.State != core.StateSleeping {
			j.Attempt++
		}
		j.State = core.StateRunning
		j.Lease = core.Lease{JobID: j.ID, WorkerID: req.WorkerID, Token: j.Lease.Token + 1, ExpiresAt: fromUS(expires)}
		pairs[i] = [2]string{j.ID, core.RunID(j.ID, j.Lease.Token)}
		if j.FirstStartedAt.IsZero() {
			j.FirstStartedAt = fromUS(now)
		}
	}
	sql := claimUpdateSQL
	if _, ok := e.d.(Postgres); ok {
		sql = strings.Replace(sql, "json_each(?)", "json_array_elements(CAST(? AS json))", 1)
		sql = strings.Replace(sql, "worker_id = ?, lease_expires_at = ?", "worker_id = CAST(? AS TEXT), lease_expires_at = CAST(? AS BIGINT)", 1)
		sql = strings.Replace(sql, "first_started_at = CASE WHEN first_started_at = 0 THEN ? ELSE", "first_started_at = CASE WHEN first_started_at = 0 THEN CAST(? AS BIGINT) ELSE", 1)
		sql = strings.Replace(sql, "THEN ? + (max_duration", "THEN CAST(? AS BIGINT) + (max_duration", 1)
		sql = strings.Replace(sql, "started_at = ?, run_id", "started_at = CAST(? AS BIGINT), run_id", 1)
	}
	n, err := q.Exec(ctx, e.render(sql), req.WorkerID, expires, now, now, now, jsonPairs(pairs))
	if err != nil {
		return nil, err
	}
	if n != int64(len(jobs)) {
		return nil, fmt.Errorf("claim updated %d of %d picked jobs", n, len(jobs))
	}
	return jobs, nil
}

// expire cancels the due jobs of queue past a cancellation deadline
// (gated or not) and returns their sequences, which the claim opens
// next (queued and sleeping jobs hold no slot).
func (fc *flowClaim) expire(ctx context.Context, queue string) ([]string, error) {
	e := fc.e
	var seqs []string
	err := e.expireAwaited(ctx, fc.q, queue, fc.now, func() ([]string, error) {
		var ids []string
		err := e.scanAll(ctx, fc.q, `UPDATE {s}jobs SET state = 'cancelled', finished_at = ?,
		last_error = CASE WHEN first_started_at = 0 THEN '`+ReasonMaxDelay+`' ELSE '`+ReasonMaxDuration+`' END
		WHERE id IN (SELECT id FROM {s}jobs WHERE queue = ? AND state IN ('queued', 'sleeping') AND run_at <= ?
			AND deadline_at IS NOT NULL AND deadline_at <= ?
			AND NOT EXISTS (SELECT 1 FROM {s}queue_configs WHERE queue = ? AND paused <> 0)`+e.d.SkipLocked()+`)
		RETURNING id, coalesce(sequence_key, '')`, []any{fc.now, queue, fc.now, fc.now, queue}, func(rows Rows) error {
			var id, s string
			if err := rows.Scan(&id, &s); err != nil {
				return err
			}
			ids = append(ids, id)
			if s != "" {
				seqs = append(seqs, s)
			}
			return nil
		})
		return ids, err
	})
	return seqs, err
}

// openSequences opens the gate of the head of every marked sequence of
// queue: the job with the smallest id that is queued, running, sleeping
// or failed and holding, when it is queued or sleeping; and of the
// sequences of jobs the claim itself cancelled (expired).
func (fc *flowClaim) openSequences(ctx context.Context, queue string, expired []string) error {
	e := fc.e
	var seqs []string
	if err := e.scanAll(ctx, fc.q, "SELECT seq, ready FROM {s}flow_seqs WHERE queue = ? AND ready <> 0", []any{queue},
		func(rows Rows) error {
			var s string
			var n int64
			err := rows.Scan(&s, &n)
			seqs = append(seqs, s)
			fc.seenSeqs[s] = n
			return err
		}); err != nil {
		return err
	}
	for _, s := range expired {
		if _, ok := fc.seenSeqs[s]; !ok {
			seqs = append(seqs, s)
		}
	}
	for _, s := range seqs {
		n, err := fc.q.Exec(ctx, e.render(`UPDATE {s}jobs SET seq_gate = 0 WHERE id = (SELECT id FROM {s}jobs
			WHERE queue = ? AND sequence_key = ? AND (state IN ('queued', 'running', 'sleeping') OR seq_hold <> 0) ORDER BY id LIMIT 1)
			AND state IN ('queued', 'sleeping') AND seq_gate <> 0`), queue, s)
		if err != nil {
			return err
		}
		fc.opened += n
	}
	return nil
}

// openKeys opens, for every limit key whose slot freed since, the gates
// of as many of its held-back jobs (in claim order) as it has free slots.
func (fc *flowClaim) openKeys(ctx context.Context) error {
	e := fc.e
	type freed struct {
		task, key string
		n         int64
	}
	var keys []freed
	// Only the keys that hold back jobs have gates to open; the marks of
	// the others are taken off all the same. Gates close only in flow
	// claims, which run one at a time, so the EXISTS sees every gate.
	// SQLite is told the index: left to itself it read jobs_limit_key,
	// every job of the key.
	idx := ""
	if _, ok := e.d.(SQLite); ok {
		idx = " INDEXED BY jobs_key_gate"
	}
	if err := e.scanAll(ctx, fc.q, `SELECT name, lkey, n, ready, CASE WHEN EXISTS (SELECT 1 FROM {s}jobs`+idx+`
		WHERE task = c.name AND limit_key = c.lkey AND key_gate <> 0) THEN 1 ELSE 0 END
		FROM {s}flow_counts c WHERE scope = 'k' AND ready <> 0`, nil,
		func(rows Rows) error {
			var f freed
			var ready, gated int64
			err := rows.Scan(&f.task, &f.key, &f.n, &ready, &gated)
			if gated != 0 {
				keys = append(keys, f)
			}
			fc.seenKeys[countKey{"k", f.task, f.key}] = ready
			return err
		}); err != nil {
		return err
	}
	for _, f := range keys {
		if err := fc.loadCfgs(ctx, []string{f.task}); err != nil {
			return err
		}
		free := int64(1 << 30)
		if c := fc.cfgs[f.task]; c.perKey > 0 {
			free = c.perKey - f.n
		}
		if free <= 0 {
			continue
		}
		n, err := fc.q.Exec(ctx, e.render(`UPDATE {s}jobs SET key_gate = 0 WHERE id IN (SELECT id FROM {s}jobs
			WHERE task = ? AND limit_key = ? AND key_gate <> 0 ORDER BY priority, run_at, id LIMIT ?)`), f.task, f.key, free)
		if err != nil {
			return err
		}
		fc.opened += n
	}
	return nil
}

// sequenceHead reports whether j may start now in its sequence: no job
// of the sequence with a smaller id is queued, running, sleeping or
// holding, and no other job of it is running or sleeping.
func (fc *flowClaim) sequenceHead(ctx context.Context, j core.Job) (bool, error) {
	var before, busy int64
	err := fc.e.scanAll(ctx, fc.q, `SELECT
		(SELECT count(*) FROM (SELECT 1 FROM {s}jobs WHERE queue = ? AND sequence_key = ?
			AND (state IN ('queued', 'running', 'sleeping') OR seq_hold <> 0) AND id < ? LIMIT 1) AS b),
		(SELECT count(*) FROM (SELECT 1 FROM {s}jobs WHERE queue = ? AND sequence_key = ?
			AND state IN ('running', 'sleeping') AND id <> ? LIMIT 1) AS r)`,
		[]any{j.Queue, j.SequenceKey, j.ID, j.Queue, j.SequenceKey, j.ID}, func(rows Rows) error { return rows.Scan(&before, &busy) })
	return before == 0 && busy == 0, err
}

// load reads the configs, counts and start windows the jobs need.
func (fc *flowClaim) load(ctx context.Context, jobs []core.Job) error {
	var tasks []string
	seen := map[string]bool{}
	for _, j := range jobs {
		if _, ok := fc.cfgs[j.Task]; !ok && !seen[j.Task] {
			seen[j.Task] = true
			tasks = append(tasks, j.Task)
		}
	}
	if err := fc.loadCfgs(ctx, tasks); err != nil {
		return err
	}
	var counts, starts []countKey
	want := map[countKey]bool{}
	wantStart := map[countKey]bool{}
	for _, j := range jobs {
		c := fc.cfgs[j.Task]
		add := func(k countKey, list *[]countKey, loaded map[countKey]int64, w map[countKey]bool) {
			if _, ok := loaded[k]; !ok && !w[k] {
				w[k] = true
				*list = append(*list, k)
			}
		}
		if c.counted() {
			add(countKey{"t", j.Task, ""}, &counts, fc.counts, want)
		}
		if c.perKey > 0 && c.keyed && j.LimitKey != "" {
			add(countKey{"k", j.Task, j.LimitKey}, &counts, fc.counts, want)
		}
		if c.rate > 0 {
			add(countKey{"t", j.Task, ""}, &starts, fc.starts, wantStart)
		}
		if c.rateKey > 0 && j.LimitKey != "" {
			add(countKey{"k", j.Task, j.LimitKey}, &starts, fc.starts, wantStart)
		}
	}
	if err := fc.loadCounts(ctx, counts); err != nil {
		return err
	}
	// A keyed task that runs nothing (read before the claim counts any
	// job of it) leaves keyed mode.
	for _, j := range jobs {
		t := j.Task
		c := fc.cfgs[t]
		if fc.looked[t] || !c.keyed || fc.keep[t] {
			continue
		}
		fc.looked[t] = true
		if fc.counts[countKey{"t", t, ""}] != 0 {
			continue
		}
		if err := fc.leave(ctx, t); err != nil {
			return err
		}
	}
	return fc.loadStarts(ctx, starts)
}

// leave takes task out of keyed mode (leaveKeyed) and forgets what the
// claim read of its key rows.
func (fc *flowClaim) leave(ctx context.Context, task string) error {
	if err := fc.e.leaveKeyed(ctx, fc.q, task); err != nil {
		return err
	}
	fc.cfgs[task].keyed = false
	fc.opened++
	for k := range fc.seenKeys {
		if k.scope == "k" && k.name == task {
			delete(fc.seenKeys, k)
		}
	}
	for k := range fc.counts {
		if k.scope == "k" && k.name == task {
			delete(fc.counts, k)
		}
	}
	return nil
}

// enter puts task in keyed mode in the middle of the walk (enterKeyed)
// and reads the counts of the keys it has counted claims in, adding those
// claims, and of the keys of the task's jobs in rest (what is left of the
// page the walk loaded); a Postgres claim, which holds row locks of jobs
// by then, returns errNeedKeyed instead.
func (fc *flowClaim) enter(ctx context.Context, task string, rest []core.Job) error {
	if !fc.mayEnter {
		return errNeedKeyed{task}
	}
	if err := fc.e.enterKeyed(ctx, fc.q, task); err != nil {
		return err
	}
	fc.cfgs[task].keyed = true
	fc.looked[task] = true
	walked := map[countKey]int64{}
	var keys []countKey
	for k, n := range fc.counts {
		if k.scope == "k" && k.name == task {
			walked[k] = n
			keys = append(keys, k)
		}
	}
	for _, j := range rest {
		k := countKey{"k", task, j.LimitKey}
		if _, ok := walked[k]; !ok && j.Task == task && j.LimitKey != "" {
			walked[k] = 0
			keys = append(keys, k)
		}
	}
	if err := fc.loadCounts(ctx, keys); err != nil {
		return err
	}
	for k, n := range walked {
		fc.counts[k] += n
	}
	return nil
}

// loadCfgs reads the flow limits of tasks not read yet.
func (fc *flowClaim) loadCfgs(ctx context.Context, tasks []string) error {
	var need []string
	for _, t := range tasks {
		if _, ok := fc.cfgs[t]; !ok {
			fc.cfgs[t] = &flowCfg{}
			need = append(need, t)
		}
	}
	if len(need) == 0 {
		return nil
	}
	cond, arg := fc.e.inStrings("task", need)
	return fc.e.scanAll(ctx, fc.q, `SELECT task, max_running, max_running_per_key, max_starts_per_second, max_starts_per_second_per_key,
		CASE WHEN EXISTS (SELECT 1 FROM {s}flow_counts m WHERE m.scope = '`+keyedScope+`' AND m.name = task AND m.lkey = '') THEN 1 ELSE 0 END
		FROM {s}task_configs WHERE `+cond, []any{arg}, func(rows Rows) error {
		var t string
		var c flowCfg
		var keyed int64
		if err := rows.Scan(&t, &c.maxRunning, &c.perKey, &c.rate, &c.rateKey, &keyed); err != nil {
			return err
		}
		c.keyed = keyed != 0 && c.perKey > 0
		*fc.cfgs[t] = c
		return nil
	})
}

// loadCounts reads the running counts keys (0 when a row is missing).
// The keys are one JSON argument joined on the primary key: an OR of
// conditions made Postgres scan every key row of the task and filter.
func (fc *flowClaim) loadCounts(ctx context.Context, keys []countKey) error {
	if len(keys) == 0 {
		return nil
	}
	rows := make([][]any, len(keys))
	for i, k := range keys {
		fc.counts[k] = 0
		rows[i] = []any{k.scope, k.name, k.key}
	}
	return fc.e.scanAll(ctx, fc.q, `SELECT c.scope, c.name, c.lkey, c.n FROM `+fc.e.jsonRows("scope", "name", "lkey")+`
		JOIN {s}flow_counts c ON c.scope = x.scope AND c.name = x.name AND c.lkey = x.lkey`, []any{jsonArg(rows)},
		func(rows Rows) error {
			var k countKey
			var n int64
			if err := rows.Scan(&k.scope, &k.name, &k.key, &n); err != nil {
				return err
			}
			fc.counts[k] = n
			return nil
		})
}

// loadStarts reads the claims of the current second of keys (task rows
// have an empty key), joined on the primary key as loadCounts does.
func (fc *flowClaim) loadStarts(ctx context.Context, keys []countKey) error {
	if len(keys) == 0 {
		return nil
	}
	rows := make([][]any, len(keys))
	for i, k := range keys {
		fc.starts[k] = 0
		rows[i] = []any{k.name, k.key}
	}
	return fc.e.scanAll(ctx, fc.q, `SELECT s.task, s.lkey, s.n FROM `+fc.e.jsonRows("task", "lkey")+`
		JOIN {s}flow_starts s ON s.task = x.task AND s.lkey = x.lkey AND s.sec = ?`, []any{jsonArg(rows), fc.sec},
		func(rows Rows) error {
			var k countKey
			var n int64
			if err := rows.Scan(&k.name, &k.key, &n); err != nil {
				return err
			}
			k.scope = "t"
			if k.key != "" {
				k.scope = "k"
			}
			fc.starts[k] = n
			return nil
		})
}

// gate closes the gate col of the jobs ids.
func (fc *flowClaim) gate(ctx context.Context, col string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	cond, arg := fc.e.inStrings("id", ids)
	_, err := fc.q.Exec(ctx, fc.e.render("UPDATE {s}jobs SET "+col+" = 1 WHERE "+cond), arg)
	return err
}

// count takes off the marks the claim consumed and adds the claimed jobs
// to the running counts and start windows of what their configs limit.
// It writes sequences first, then counts in key order (as flowAfter
// does), so that no two transactions wait for each other's rows.
func (fc *flowClaim) count(ctx context.Context, queue string, jobs []core.Job, queueLimited bool) error {
	e := fc.e
	inc, starts := fc.increments(jobs, queueLimited)
	if len(fc.seenSeqs) > 0 {
		seqs := make([]string, 0, len(fc.seenSeqs))
		for s := range fc.seenSeqs {
			seqs = append(seqs, s)
		}
		sort.Strings(seqs)
		for _, s := range seqs {
			if _, err := fc.q.Exec(ctx, e.render("UPDATE {s}flow_seqs SET ready = ready - ? WHERE queue = ? AND seq = ?"),
				fc.seenSeqs[s], queue, s); err != nil {
				return err
			}
		}
	}
	all := map[countKey]int64{}
	for k, n := range inc {
		all[k] = n
	}
	for k := range fc.seenKeys {
		all[k] += 0
	}
	if len(all) > 0 {
		// One statement, rows in key order: a row the claim only read the
		// marks of exists (marks are made on rows that exist, which only a
		// config change, under the flow lock, deletes), so its insert is
		// the update that takes the marks off.
		rows := make([][]any, 0, len(all))
		for _, k := range sortedKeys(all) {
			rows = append(rows, []any{k.scope, k.name, k.key, inc[k], -fc.seenKeys[k]})
		}
		if _, err := fc.q.Exec(ctx, e.render(`INSERT INTO {s}flow_counts (scope, name, lkey, n, ready)
			SELECT x.scope, x.name, x.lkey, CAST(x.n AS BIGINT), CAST(x.ready AS INTEGER) FROM `+e.jsonRows("scope", "name", "lkey", "n", "ready")+`
			WHERE true ORDER BY x.ord
			ON CONFLICT (scope, name, lkey) DO UPDATE SET n = {s}flow_counts.n + excluded.n, ready = {s}flow_counts.ready + excluded.ready`),
			jsonArg(rows)); err != nil {
			return err
		}
	}
	if len(starts) > 0 && fc.sec%10 == 0 {
		// A claim that read its clock before a later one committed may
		// still count in an older window: keep a minute of them.
		if _, err := fc.q.Exec(ctx, e.render("DELETE FROM {s}flow_starts WHERE sec < ?"), fc.sec-60); err != nil {
			return err
		}
	}
	if len(starts) == 0 {
		return nil
	}
	rows := make([][]any, 0, len(starts))
	for _, k := range sortedKeys(starts) {
		rows = append(rows, []any{k.name, k.key, starts[k]})
	}
	_, err := fc.q.Exec(ctx, e.render(`INSERT INTO {s}flow_starts (task, lkey, sec, n)
		SELECT x.task, x.lkey, CAST(? AS BIGINT), CAST(x.n AS BIGINT) FROM `+e.jsonRows("task", "lkey", "n")+`
		WHERE true ORDER BY x.ord
		ON CONFLICT (task, lkey, sec) DO UPDATE SET n = {s}flow_starts.n + excluded.n`), fc.sec, jsonArg(rows))
	return err
}

// increments returns what claiming jobs adds to the running counts and
// to the start windows of what their configs (read in fc.cfgs) limit.
func (fc *flowClaim) increments(jobs []core.Job, queueLimited bool) (inc, starts map[countKey]int64) {
	inc, starts = map[countKey]int64{}, map[countKey]int64{}
	for _, j := range jobs {
		c := fc.cfgs[j.Task]
		if c.counted() {
			inc[countKey{"t", j.Task, ""}]++
		}
		if c.perKey > 0 && c.keyed && j.LimitKey != "" {
			inc[countKey{"k", j.Task, j.LimitKey}]++
		}
		if queueLimited {
			inc[countKey{"q", j.Queue, ""}]++
		}
		if c.rate > 0 {
			starts[countKey{"t", j.Task, ""}]++
		}
		if c.rateKey > 0 && j.LimitKey != "" {
			starts[countKey{"k", j.Task, j.LimitKey}]++
		}
	}
	return inc, starts
}

// jsonRows is a FROM item x of the rows of one JSON argument, an array of
// arrays: a text column per name, in order, and ord, the row's position.
func (e *Engine) jsonRows(cols ...string) string {
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = fmt.Sprintf("value ->> %d AS %s", i, c)
	}
	src := "json_each(?)"
	ord := "key"
	if _, ok := e.d.(Postgres); ok {
		src, ord = "json_array_elements(CAST(? AS json)) WITH ORDINALITY AS a(value, ord)", "ord"
	}
	return "(SELECT " + strings.Join(sel, ", ") + ", " + ord + " AS ord FROM " + src + ") AS x"
}

// jsonArg encodes rows as the argument of jsonRows.
func jsonArg(rows [][]any) string {
	b, _ := json.Marshal(rows)
	return string(b)
}

// floorDiv divides rounding toward negative infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
