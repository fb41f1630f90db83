package engine

import (
	"context"

	"github.com/boson-go/boson/core"
)

// The SQLite flow claim in three statements.
//
// ClaimFlow reads and writes the flow tables in about ten statements
// inside the write transaction, which every writer of the file waits
// for. Most claims need none of its care: no limit is near, no mark
// waits to open a gate, no sequence or start rate applies.
// sqliteFlowClaim decides those with one read and two writes, in the
// same write transaction, and leaves everything else to ClaimFlow:
//
//   - One SELECT checks that nothing waits for a flow claim (flow control
//     is on, the queue is not paused, no sequence of the queue is marked,
//     no marked key has gated jobs, no due job of the queue is past a
//     cancellation deadline), picks the first Limit ungated due jobs in
//     claim order from jobs_claim, as ClaimFlow's walk starts, and reads
//     beside each its task's config and the running counts it adds to.
//     When a check fails it picks nothing.
//   - If none of the jobs is in a sequence (every change in a sequence
//     marks it, which sends the claim to ClaimFlow first; this is a
//     second guard), none counts in a start window, and every running
//     count they add to (task, limit key, queue) stays within its limit
//     (outside keyed mode, the task's count within the per-key limit as
//     well, and a keyed task that runs nothing goes to ClaimFlow, as in
//     pgFlowClaim),
//     it adds them to those counts, taking off the marks it read on the
//     key rows it counts in (ready = ready - seen), and marks them
//     running: ClaimFlow's count and markClaimed.
//   - Otherwise it claims nothing, and the caller runs ClaimFlow in the
//     same transaction, which passes over, gates or holds what it must.
//
// SQLite's one writer makes what the SELECT reads exact: no other
// transaction writes between the read and the writes.

// sqliteFlowClaimSQL is the read; its arguments are the queue twice
// (its limit and count), the queue, now twice (the pick), the queue
// twice and now twice (the checks), and the limit. Each row is the
// queue's limit and count, the job's task config (max_running, per
// key, rate, rate per key), its task's and its key's running counts
// and its key's marks, whether the task is in keyed mode, then the
// job. The pick walks jobs_claim in claim order and stops at the
// limit: the joins are lookups by primary key, and the checks and the
// queue's figures do not depend on the job, so SQLite evaluates them
// once.
var sqliteFlowClaimSQL = `SELECT coalesce((SELECT max_running FROM {s}queue_configs WHERE queue = ?), 0),
	coalesce((SELECT n FROM {s}flow_counts WHERE scope = 'q' AND name = ? AND lkey = ''), 0),
	coalesce(tc.max_running, 0), coalesce(tc.max_running_per_key, 0),
	coalesce(tc.max_starts_per_second, 0), coalesce(tc.max_starts_per_second_per_key, 0),
	coalesce(ct.n, 0), coalesce(ck.n, 0), coalesce(ck.ready, 0),
	EXISTS (SELECT 1 FROM {s}flow_counts cm WHERE cm.scope = '` + keyedScope + `' AND cm.name = j.task AND cm.lkey = ''), ` + JobCols("j") + `
FROM {s}jobs AS j INDEXED BY jobs_claim
	LEFT JOIN {s}task_configs tc ON tc.task = j.task
	LEFT JOIN {s}flow_counts ct ON ct.scope = 't' AND ct.name = j.task AND ct.lkey = ''
	LEFT JOIN {s}flow_counts ck ON ck.scope = 'k' AND ck.name = j.task AND ck.lkey = j.limit_key
WHERE j.queue = ? AND j.state IN ('queued', 'sleeping') AND j.seq_gate = 0 AND j.key_gate = 0
	AND j.run_at <= ? AND (j.deadline_at IS NULL OR j.deadline_at > ?)
	AND EXISTS (SELECT 1 FROM {s}flow_switch WHERE seq <> 0 OR limits <> 0)
	AND NOT EXISTS (SELECT 1 FROM {s}queue_configs WHERE queue = ? AND paused <> 0)
	AND NOT EXISTS (SELECT 1 FROM {s}flow_seqs INDEXED BY flow_seqs_ready WHERE queue = ? AND ready <> 0)
	AND NOT (EXISTS (SELECT 1 FROM {s}jobs INDEXED BY jobs_key_gate WHERE key_gate <> 0)
		AND EXISTS (SELECT 1 FROM {s}flow_counts c INDEXED BY flow_counts_ready WHERE c.scope = 'k' AND c.ready <> 0
			AND EXISTS (SELECT 1 FROM {s}jobs INDEXED BY jobs_key_gate WHERE task = c.name AND limit_key = c.lkey AND key_gate <> 0)))
	AND NOT EXISTS (SELECT 1 FROM {s}jobs INDEXED BY jobs_claim_deadline WHERE queue = ? AND state IN ('queued', 'sleeping')
		AND deadline_at IS NOT NULL AND deadline_at <= ? AND run_at <= ?)
ORDER BY j.priority, j.run_at, j.id LIMIT ?`

// sqliteFlowClaim is the flow claim of req at now inside SQLite's write
// transaction q when no limit binds it (see above). It reports whether it
// decided the claim; when it did not, it has written nothing and the
// caller must run ClaimFlow.
func (e *Engine) sqliteFlowClaim(ctx context.Context, q Querier, req core.ClaimRequest, now int64) ([]core.Job, bool, error) {
	fc := e.newFlowClaim(q, now)
	var picked []core.Job
	var qmax int64
	marks := map[countKey]int64{}
	args := []any{req.Queue, req.Queue, req.Queue, now, now, req.Queue, req.Queue, req.Queue, now, now, req.Limit}
	err := e.scanAll(ctx, q, sqliteFlowClaimSQL, args, func(rows Rows) error {
		var c flowCfg
		var qn, tn, kn, ready, keyed int64
		j, err := ScanJob(rows, &qmax, &qn, &c.maxRunning, &c.perKey, &c.rate, &c.rateKey, &tn, &kn, &ready, &keyed)
		if err != nil {
			return err
		}
		c.keyed = keyed != 0 && c.perKey > 0
		fc.cfgs[j.Task] = &c
		fc.counts[countKey{"q", j.Queue, ""}] = qn
		fc.counts[countKey{"t", j.Task, ""}] = tn
		if j.LimitKey != "" && c.keyed {
			fc.counts[countKey{"k", j.Task, j.LimitKey}] = kn
			marks[countKey{"k", j.Task, j.LimitKey}] = ready
		}
		picked = append(picked, j)
		return nil
	})
	// A check that fails picks nothing. Nothing picked goes to ClaimFlow
	// too, which takes off the marks of every key: left on, they would
	// send idle claims to the writer.
	if err != nil || len(picked) == 0 {
		return nil, false, err
	}
	inc, starts := fc.increments(picked, qmax > 0)
	if len(starts) > 0 {
		return nil, false, nil
	}
	for _, j := range picked {
		if j.SequenceKey != "" {
			return nil, false, nil
		}
	}
	for k, n := range inc {
		limit := qmax
		switch k.scope {
		case "t":
			// The task's limit; outside keyed mode the per-key limit too
			// (the task's count then bounds its keys'), and a keyed task
			// that runs nothing goes to ClaimFlow, which leaves keyed mode.
			c := fc.cfgs[k.name]
			limit = int64(1) << 62
			if c.maxRunning > 0 {
				limit = c.maxRunning
			}
			if c.perKey > 0 && !c.keyed {
				limit = min(limit, c.perKey)
			}
			if c.keyed && fc.counts[k] == 0 && n <= c.perKey {
				return nil, false, nil
			}
		case "k":
			limit = fc.cfgs[k.name].perKey
		}
		if fc.counts[k]+n > limit {
			return nil, false, nil
		}
		if marks[k] != 0 {
			fc.seenKeys[k] = marks[k]
		}
	}
	if err := fc.count(ctx, req.Queue, picked, qmax > 0); err != nil {
		return nil, false, err
	}
	jobs, err := e.markClaimed(ctx, q, req, now, picked)
	return jobs, true, err
}
