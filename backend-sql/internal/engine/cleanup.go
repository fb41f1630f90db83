package engine

import (
	"context"

	"github.com/boson-go/boson/core"
)

// Cleanup implements core.QueueBackend.
func (e *Engine) Cleanup(ctx context.Context, req core.CleanupRequest) (int, error) {
	if err := e.check("cleanup"); err != nil {
		return 0, err
	}
	if err := core.ValidateCleanup(req, e.limits); err != nil {
		return 0, err
	}
	var n int
	err := e.st.WriteTx(ctx, func(q Querier) error {
		n = 0
		sql := "SELECT id FROM {s}jobs WHERE state IN ('succeeded', 'failed', 'cancelled') AND finished_at < ?"
		args := []any{toUS(req.FinishedBefore)}
		if req.Queue != "" {
			sql += " AND queue = ?"
			args = append(args, req.Queue)
		}
		sql += " ORDER BY finished_at, id LIMIT ?" + e.d.SkipLocked()
		args = append(args, req.Limit)
		var ids []any
		if err := e.scanAll(ctx, q, sql, args, func(rows Rows) error {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
			return nil
		}); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		strs := make([]string, len(ids))
		for i, id := range ids {
			strs[i] = id.(string)
		}
		if err := e.flowAfterIDs(ctx, q, strs); err != nil {
			return err
		}
		in := placeholders(len(ids))
		for _, table := range []string{"runs", "checkpoints", "job_waits"} {
			if _, err := q.Exec(ctx, e.render("DELETE FROM {s}"+table+" WHERE job_id IN ("+in+")"), ids...); err != nil {
				return err
			}
		}
		deleted, err := q.Exec(ctx, e.render("DELETE FROM {s}jobs WHERE id IN ("+in+")"), ids...)
		n = int(deleted)
		return err
	})
	if err != nil {
		return 0, e.wrap("cleanup", err)
	}
	e.keepStats(ctx)
	return n, nil
}
