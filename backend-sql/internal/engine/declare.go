package engine

import (
	"context"
	"time"

	"github.com/boson-go/boson/core"
)

var _ core.QueueDeclarer = (*Engine)(nil)

// CreateQueue implements core.QueueDeclarer in one write transaction: it
// makes sure the queue has a queue_configs row (ON CONFLICT DO NOTHING, so
// that concurrent calls on a new queue meet on that row), locks the row,
// and then declares the queue with cfg or checks cfg against the stored
// config. The declaration is the row's declared column, which
// PutQueueConfig leaves alone and DeleteQueue removes with the row.
func (e *Engine) CreateQueue(ctx context.Context, cfg core.QueueConfig) (core.QueueConfig, bool, error) {
	if err := e.check("create queue"); err != nil {
		return core.QueueConfig{}, false, err
	}
	if err := core.ValidateQueueConfig(cfg); err != nil {
		return core.QueueConfig{}, false, err
	}
	var stored core.QueueConfig
	var created bool
	var conflict error
	err := e.st.WriteTx(ctx, func(q Querier) error {
		stored, created, conflict = core.QueueConfig{}, false, nil
		if err := e.flowLockConfig(ctx, q); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, e.render("INSERT INTO {s}queue_configs (queue) VALUES (?) ON CONFLICT (queue) DO NOTHING"), cfg.Queue); err != nil {
			return err
		}
		prev := core.QueueConfig{Queue: cfg.Queue}
		var declared bool
		if err := e.scanAll(ctx, q, "SELECT paused, retention_ttl, cleanup_limit, max_running, declared FROM {s}queue_configs WHERE queue = ?"+e.d.LockRows(),
			[]any{cfg.Queue}, func(rows Rows) error {
				var paused, ttl, decl int64
				if err := rows.Scan(&paused, &ttl, &prev.CleanupLimit, &prev.MaxRunning, &decl); err != nil {
					return err
				}
				prev.Paused, prev.RetentionTTL, declared = paused != 0, time.Duration(ttl), decl != 0
				return nil
			}); err != nil {
			return err
		}
		if declared {
			stored = prev
			if !core.QueueConfigsMatch(prev, cfg) {
				conflict = core.QueueConflict(prev, cfg)
			}
			return nil
		}
		stored = core.DeclaredConfig(prev, cfg)
		paused := 0
		if stored.Paused {
			paused = 1
		}
		if _, err := q.Exec(ctx, e.render("UPDATE {s}queue_configs SET paused = ?, retention_ttl = ?, cleanup_limit = ?, max_running = ?, declared = 1 WHERE queue = ?"),
			paused, int64(stored.RetentionTTL), stored.CleanupLimit, stored.MaxRunning, cfg.Queue); err != nil {
			return err
		}
		created = true
		return e.recountQueue(ctx, q, stored)
	})
	if err != nil {
		return core.QueueConfig{}, false, e.wrap("create queue", err)
	}
	return stored, created, conflict
}

// QueueDeclared implements core.QueueDeclarer.
func (e *Engine) QueueDeclared(ctx context.Context, queue string) (bool, error) {
	if err := e.check("queue declared"); err != nil {
		return false, err
	}
	if err := core.ValidateName("queue", queue); err != nil {
		return false, err
	}
	var declared bool
	err := e.scanAll(ctx, e.st.Reader(), "SELECT declared FROM {s}queue_configs WHERE queue = ?", []any{queue}, func(rows Rows) error {
		var d int64
		err := rows.Scan(&d)
		declared = d != 0
		return err
	})
	if err != nil {
		return false, e.wrap("queue declared", err)
	}
	return declared, nil
}
