package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/boson-go/boson/core"
)

// fromUSDuration turns microseconds into a duration.
func fromUSDuration(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

// GetTaskConfig implements core.QueueBackend.
func (e *Engine) GetTaskConfig(ctx context.Context, task string) (core.TaskConfig, error) {
	if err := e.check("get task config"); err != nil {
		return core.TaskConfig{}, err
	}
	if err := core.ValidateName("task", task); err != nil {
		return core.TaskConfig{}, err
	}
	var cfg core.TaskConfig
	found := false
	err := e.scanAll(ctx, e.st.Reader(), `SELECT task, max_in_flight, max_enqueue_per_second, queue, priority, max_attempts, retry,
		max_running, max_running_per_key, max_starts_per_second, max_starts_per_second_per_key, hold_sequence_on_failure FROM {s}task_configs WHERE task = ?`,
		[]any{task}, func(rows Rows) error {
			var retry string
			var hold int64
			if err := rows.Scan(&cfg.Task, &cfg.MaxInFlight, &cfg.MaxEnqueuePerSecond, &cfg.Queue, &cfg.Priority, &cfg.MaxAttempts, &retry,
				&cfg.MaxRunning, &cfg.MaxRunningPerKey, &cfg.MaxStartsPerSecond, &cfg.MaxStartsPerSecondPerKey, &hold); err != nil {
				return err
			}
			cfg.HoldSequenceOnFailure = hold != 0
			found = true
			if retry != "" {
				return json.Unmarshal([]byte(retry), &cfg.Retry)
			}
			return nil
		})
	if err != nil {
		return core.TaskConfig{}, e.wrap("get task config", err)
	}
	if !found {
		return core.TaskConfig{}, fmt.Errorf("boson/%s: get task config: %w: task %q has no stored config", e.d.Name(), core.ErrNotFound, task)
	}
	return cfg, nil
}

// PutTaskConfig implements core.QueueBackend.
func (e *Engine) PutTaskConfig(ctx context.Context, cfg core.TaskConfig) error {
	if err := e.check("put task config"); err != nil {
		return err
	}
	if err := core.ValidateTaskConfig(cfg); err != nil {
		return err
	}
	err := e.st.WriteTx(ctx, func(q Querier) error {
		if err := e.flowLockConfig(ctx, q); err != nil {
			return err
		}
		_, err := q.Exec(ctx, e.render(`INSERT INTO {s}task_configs (task, max_in_flight, max_enqueue_per_second, queue, priority, max_attempts, retry,
				max_running, max_running_per_key, max_starts_per_second, max_starts_per_second_per_key, hold_sequence_on_failure)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (task) DO UPDATE SET max_in_flight = excluded.max_in_flight,
			max_enqueue_per_second = excluded.max_enqueue_per_second, queue = excluded.queue, priority = excluded.priority,
			max_attempts = excluded.max_attempts, retry = excluded.retry, max_running = excluded.max_running,
			max_running_per_key = excluded.max_running_per_key, max_starts_per_second = excluded.max_starts_per_second,
			max_starts_per_second_per_key = excluded.max_starts_per_second_per_key, hold_sequence_on_failure = excluded.hold_sequence_on_failure`),
			cfg.Task, cfg.MaxInFlight, cfg.MaxEnqueuePerSecond, cfg.Queue, cfg.Priority, cfg.MaxAttempts, EncodeRetry(cfg.Retry),
			cfg.MaxRunning, cfg.MaxRunningPerKey, cfg.MaxStartsPerSecond, cfg.MaxStartsPerSecondPerKey, boolInt(cfg.HoldSequenceOnFailure))
		if err != nil {
			return err
		}
		return e.recountTask(ctx, q, cfg)
	})
	if err == nil {
		e.SignalAll()
	}
	return e.wrap("put task config", err)
}

// GetQueueConfig implements core.QueueBackend.
func (e *Engine) GetQueueConfig(ctx context.Context, queue string) (core.QueueConfig, error) {
	if err := e.check("get queue config"); err != nil {
		return core.QueueConfig{}, err
	}
	if err := core.ValidateName("queue", queue); err != nil {
		return core.QueueConfig{}, err
	}
	cfg := core.QueueConfig{Queue: queue}
	err := e.scanAll(ctx, e.st.Reader(), "SELECT paused, retention_ttl, cleanup_limit, max_running FROM {s}queue_configs WHERE queue = ?",
		[]any{queue}, func(rows Rows) error {
			var paused, ttl int64
			if err := rows.Scan(&paused, &ttl, &cfg.CleanupLimit, &cfg.MaxRunning); err != nil {
				return err
			}
			cfg.Paused = paused != 0
			cfg.RetentionTTL = time.Duration(ttl)
			return nil
		})
	if err != nil {
		return core.QueueConfig{}, e.wrap("get queue config", err)
	}
	return cfg, nil
}

// PutQueueConfig implements core.QueueBackend.
func (e *Engine) PutQueueConfig(ctx context.Context, cfg core.QueueConfig) error {
	if err := e.check("put queue config"); err != nil {
		return err
	}
	if err := core.ValidateQueueConfig(cfg); err != nil {
		return err
	}
	paused := 0
	if cfg.Paused {
		paused = 1
	}
	err := e.st.WriteTx(ctx, func(q Querier) error {
		if err := e.flowLockConfig(ctx, q); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, e.render(`INSERT INTO {s}queue_configs (queue, paused, retention_ttl, cleanup_limit, max_running) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused, retention_ttl = excluded.retention_ttl, cleanup_limit = excluded.cleanup_limit,
			max_running = excluded.max_running`),
			cfg.Queue, paused, int64(cfg.RetentionTTL), cfg.CleanupLimit, cfg.MaxRunning); err != nil {
			return err
		}
		if err := e.recountQueue(ctx, q, cfg); err != nil {
			return err
		}
		if !cfg.Paused {
			return e.d.Notify(ctx, e, q, []string{cfg.Queue})
		}
		return nil
	})
	if err == nil && !cfg.Paused {
		e.cursors.reset(cfg.Queue)
		e.hub.signal(cfg.Queue)
	}
	return e.wrap("put queue config", err)
}
