package engine

import (
	"context"
	"errors"
	"strings"

	"github.com/boson-go/boson/core"
)

// errPlanDone rolls back the transaction of an analysed plan.
var errPlanDone = errors.New("plan done")

// ClaimPlan returns the store's plan of the claim statement for req, as
// text, so that tests and operators can check that the claim walks the
// claim index. On Postgres it is the statement the next claim would run,
// from the head of the index or after the queue's cursor. With analyze
// (Postgres only) the statement runs inside a transaction that is rolled
// back, and the plan has actual timings and buffer counts.
func (e *Engine) ClaimPlan(ctx context.Context, req core.ClaimRequest, analyze bool) (string, error) {
	now := e.NowArg()
	var sqls []string
	var args [][]any
	switch e.d.(type) {
	case Postgres:
		opts := "COSTS OFF"
		if analyze {
			opts = "ANALYZE, BUFFERS, COSTS OFF, TIMING ON, SUMMARY ON"
		}
		// The claim that the next Claim would run: from the head of the
		// claim index, or after the queue's cursor.
		sql, a := pgClaimStatement(req, e.cursors.peek(req.Queue, now), now, e.channel)
		sqls = []string{"EXPLAIN (" + opts + ") " + e.render(sql)}
		args = [][]any{a}
	default:
		t, _ := now.(int64)
		// The pick reads the claim index; the update then finds each
		// picked job by its primary key.
		sqls = []string{"EXPLAIN QUERY PLAN " + e.render(claimPickSQL), "EXPLAIN QUERY PLAN " + e.render(claimUpdateSQL)}
		args = [][]any{{req.Queue, t, t, req.Queue, req.Limit}, {req.WorkerID, t + ceilUS(req.LeaseTTL), t, t, t, `[["x","y"]]`}}
	}
	var lines []string
	err := e.st.WriteTx(ctx, func(q Querier) error {
		if _, ok := e.d.(Postgres); ok {
			// As the claim plans it (see pgSortOffSQL).
			if _, err := q.Exec(ctx, pgSortOffSQL); err != nil {
				return err
			}
		}
		for i, sql := range sqls {
			if err := e.planLines(ctx, q, sql, args[i], &lines); err != nil {
				return err
			}
		}
		return errPlanDone
	})
	if err != nil && !errors.Is(err, errPlanDone) {
		return "", e.wrap("claim plan", err)
	}
	return strings.Join(lines, "\n"), nil
}

// planLines runs one EXPLAIN statement and appends its lines.
func (e *Engine) planLines(ctx context.Context, q Querier, sql string, args []any, lines *[]string) error {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if _, ok := e.d.(Postgres); ok {
			var line string
			if err := rows.Scan(&line); err != nil {
				return err
			}
			*lines = append(*lines, line)
			continue
		}
		var id, parent, notused int64
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			return err
		}
		*lines = append(*lines, detail)
	}
	return rows.Err()
}
