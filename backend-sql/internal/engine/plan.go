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
// claim index. With analyze (Postgres only) the statement runs inside a
// transaction that is rolled back, and the plan has actual timings.
func (e *Engine) ClaimPlan(ctx context.Context, req core.ClaimRequest, analyze bool) (string, error) {
	now := e.NowArg()
	var sql string
	var args []any
	switch e.d.(type) {
	case Postgres:
		opts := "COSTS OFF"
		if analyze {
			opts = "ANALYZE, COSTS OFF, TIMING ON, SUMMARY ON"
		}
		runIDs := make([]string, req.Limit)
		for i := range runIDs {
			runIDs[i] = core.NewID(core.SystemClock{}.Now())
		}
		sql = "EXPLAIN (" + opts + ") " + e.render(pgClaim+JobCols("")+" FROM numbered")
		args = []any{now, req.Queue, req.Queue, req.Queue, req.Queue, req.Limit, req.WorkerID, ceilUS(req.LeaseTTL), runIDs}
	default:
		t, _ := now.(int64)
		sql = "EXPLAIN QUERY PLAN " + e.render(claimUpdateSQL+"RETURNING id")
		args = []any{req.WorkerID, t + ceilUS(req.LeaseTTL), t, t, req.Queue, t, t, req.Limit}
	}
	var lines []string
	err := e.st.WriteTx(ctx, func(q Querier) error {
		rows, err := q.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			vals := make([]any, 0, 4)
			if _, ok := e.d.(Postgres); ok {
				var line string
				vals = append(vals, &line)
				if err := rows.Scan(vals...); err != nil {
					return err
				}
				lines = append(lines, line)
				continue
			}
			var id, parent, notused int64
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				return err
			}
			lines = append(lines, detail)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return errPlanDone
	})
	if err != nil && !errors.Is(err, errPlanDone) {
		return "", e.wrap("claim plan", err)
	}
	return strings.Join(lines, "\n"), nil
}
