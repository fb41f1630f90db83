package engine

import (
	"context"
	"strings"

	"github.com/boson-go/boson/core"
)

// SQLite is the SQLite dialect: one writer whose transactions begin
// IMMEDIATE (so a claim never races another writer), the process clock,
// chunked multi-row inserts, and wake-ups inside the process only.
type SQLite struct{}

// Name implements Dialect.
func (SQLite) Name() string { return "sqlite" }

// NumberedPlaceholders implements Dialect.
func (SQLite) NumberedPlaceholders() bool { return false }

// NowExpr implements Dialect.
func (SQLite) NowExpr() string { return "CAST(? AS INTEGER)" }

// ServerClock implements Dialect.
func (SQLite) ServerClock() bool { return false }

// LockRows implements Dialect: the write transaction already excludes
// every other writer.
func (SQLite) LockRows() string { return "" }

// SkipLocked implements Dialect.
func (SQLite) SkipLocked() string { return "" }

// InsertJobs implements RowInserter with multi-row inserts of up to 1,000 rows.
func (SQLite) InsertJobs(ctx context.Context, e *Engine, q Querier, jobs []core.Job) (map[string]bool, error) {
	out := make(map[string]bool, len(jobs))
	const chunk = 1000
	const row = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?)"
	for start := 0; start < len(jobs); start += chunk {
		part := jobs[start:min(start+chunk, len(jobs))]
		var b strings.Builder
		b.WriteString(`INSERT INTO {s}jobs (id, queue, task, payload, headers, priority, max_attempts, retry,
			max_delay, max_duration, idempotency_key, fingerprint, actor, run_at, created_at, deadline_at, state,
			unique_mode, unique_period, key_expires_at, limit_key, sequence_key, seq_gate) VALUES `)
		args := make([]any, 0, len(part)*22)
		for i, j := range part {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(row)
			args = append(args, j.ID, j.Queue, j.Task, nullBytes(j.Payload), EncodeHeaders(j.Headers), j.Priority, j.MaxAttempts,
				EncodeRetry(j.Retry), int64(j.Cancel.MaxDelay), int64(j.Cancel.MaxDuration), NullKey(j.IdempotencyKey),
				j.Fingerprint, j.Actor, toUS(j.RunAt), toUS(j.CreatedAt), DeadlineUS(j),
				string(j.Unique), int64(j.UniquePeriod), keyExpiresUS(j), NullKey(j.LimitKey), NullKey(j.SequenceKey), seqGate(j))
		}
		keyed := false
		for _, j := range part {
			keyed = keyed || j.IdempotencyKey != ""
		}
		if !keyed {
			// Without idempotency keys nothing can conflict but a fresh
			// id, which is an error: every row is stored, and a plain
			// insert spares SQLite the buffering of RETURNING.
			if _, err := q.Exec(ctx, e.render(b.String()), args...); err != nil {
				return nil, err
			}
			for _, j := range part {
				out[j.ID] = true
			}
			continue
		}
		b.WriteString(" ON CONFLICT DO NOTHING RETURNING id")
		rows, err := q.Query(ctx, e.render(b.String()), args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			out[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Claim implements Dialect. A cheap read on the reader pool first tells
// whether anything is due, so idle workers never take the write lock, and
// whether due jobs of the queue are past a cancellation deadline, so the
// claim runs its cancelling UPDATE only then (both answers come from
// partial indexes, named so that the planner cannot walk another index
// of the queue, whose finished jobs it would have to skip). A job that passes its deadline between that read and
// the claim is still never claimed: the claim skips it, and the next
// claim or Rescue cancels it. With flow control on and jobs due, the
// claim first tries sqliteFlowClaim, and runs ClaimFlow when that one
// cannot decide.
func (SQLite) Claim(ctx context.Context, e *Engine, req core.ClaimRequest, now any) ([]core.Job, error) {
	t := now.(int64)
	var due, expired, flow, marked bool
	err := e.scanAll(ctx, e.st.Reader(), `SELECT EXISTS (SELECT 1 FROM {s}jobs INDEXED BY jobs_claim WHERE queue = ? AND state IN ('queued', 'sleeping') AND seq_gate = 0 AND key_gate = 0 AND run_at <= ?),
		EXISTS (SELECT 1 FROM {s}jobs INDEXED BY jobs_claim_deadline WHERE queue = ? AND state IN ('queued', 'sleeping') AND deadline_at IS NOT NULL AND deadline_at <= ?),
		EXISTS (SELECT 1 FROM {s}flow_switch WHERE seq <> 0 OR limits <> 0),
		EXISTS (SELECT 1 FROM {s}flow_seqs WHERE queue = ? AND ready <> 0) OR EXISTS (SELECT 1 FROM {s}flow_counts WHERE scope = 'k' AND ready <> 0)`,
		[]any{req.Queue, t, req.Queue, t, req.Queue}, func(rows Rows) error { return rows.Scan(&due, &expired, &flow, &marked) })
	if err != nil || !(due || (flow && (expired || marked))) {
		return nil, err
	}
	var jobs []core.Job
	err = e.st.WriteTx(ctx, func(q Querier) error {
		if flow && due {
			// Most flow claims are bound by no limit: sqliteFlowClaim
			// decides those in three statements (see there).
			var done bool
			var err error
			if jobs, done, err = e.sqliteFlowClaim(ctx, q, req, t); err != nil || done {
				return err
			}
		}
		on, err := e.flowSwitchOn(ctx, q)
		if err != nil {
			return err
		}
		if on {
			jobs, err = e.ClaimFlow(ctx, q, req, t)
		} else {
			jobs, err = e.ClaimSQL(ctx, q, req, t, expired)
		}
		return err
	})
	return jobs, err
}

// Complete implements Dialect in one write transaction.
func (SQLite) Complete(ctx context.Context, e *Engine, items []core.Completion, now any) ([]bool, []string, error) {
	var ok []bool
	var queues []string
	err := e.st.WriteTx(ctx, func(q Querier) error {
		var err error
		ok, queues, err = e.CompleteSQL(ctx, q, items, now.(int64))
		return err
	})
	return ok, queues, err
}

// Notify implements Dialect: the engine signals local subscribers after
// the commit, which is every subscriber SQLite can have.
func (SQLite) Notify(context.Context, *Engine, Querier, []string) error { return nil }
