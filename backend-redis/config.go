package redisq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// GetTaskConfig returns the stored config of a task or an error wrapping
// core.ErrNotFound.
func (b *Backend) GetTaskConfig(ctx context.Context, task string) (core.TaskConfig, error) {
	if err := b.check("get task config"); err != nil {
		return core.TaskConfig{}, err
	}
	if err := core.ValidateName("task", task); err != nil {
		return core.TaskConfig{}, err
	}
	s, err := b.rdb.HGet(ctx, b.ks.tasks(), task).Result()
	if errors.Is(err, redis.Nil) {
		return core.TaskConfig{}, fmt.Errorf("redisq: task config %q: %w", task, core.ErrNotFound)
	}
	if err != nil {
		return core.TaskConfig{}, wrap("get task config", err)
	}
	var cfg core.TaskConfig
	if err := json.Unmarshal([]byte(s), &cfg); err != nil {
		return core.TaskConfig{}, fmt.Errorf("redisq: task config %q: %w", task, err)
	}
	return cfg, nil
}

// PutTaskConfig stores cfg, replacing the task's config. Enqueues that start
// after it returns apply its limits.
func (b *Backend) PutTaskConfig(ctx context.Context, cfg core.TaskConfig) error {
	if err := b.check("put task config"); err != nil {
		return err
	}
	if err := core.ValidateTaskConfig(cfg); err != nil {
		return err
	}
	if b.sharded && cfg.UsesFlowControl() {
		return fmt.Errorf("redisq: put task config %q: %w: the flow limits of a task span queues, which live in different slots of this cluster; use Options.OneSlot", cfg.Task, core.ErrUnsupported)
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("redisq: put task config: %w", err)
	}
	if err := b.rdb.HSet(ctx, b.ks.tasks(), cfg.Task, data).Err(); err != nil {
		return wrap("put task config", err)
	}
	if b.sharded {
		return nil
	}
	// The flow limits go where the claim script reads them; the jobs that
	// the old limits held back are let back, so the new ones take effect
	// at the next claim.
	flow := ""
	if cfg.UsesFlowControl() {
		hold := 0
		if cfg.HoldSequenceOnFailure {
			hold = 1
		}
		flow = fmt.Sprintf("%d|%d|%d|%d|%d", cfg.MaxRunning, cfg.MaxRunningPerKey, cfg.MaxStartsPerSecond, cfg.MaxStartsPerSecondPerKey, hold)
	}
	_, err = b.run(ctx, scriptFlowConfig, core.DefaultQueue, cfg.Task, flow)
	return wrap("put task config", err)
}

// GetQueueConfig returns the stored config of a queue, or the zero config
// with Queue set.
func (b *Backend) GetQueueConfig(ctx context.Context, queue string) (core.QueueConfig, error) {
	out := core.QueueConfig{Queue: queue}
	if err := b.check("get queue config"); err != nil {
		return out, err
	}
	if err := core.ValidateName("queue", queue); err != nil {
		return out, err
	}
	m, err := b.rdb.HGetAll(ctx, b.ks.queueKeys(queue)[kConf]).Result()
	if err != nil {
		return out, wrap("get queue config", err)
	}
	out.Paused = m["paused"] == "1"
	ttl, _ := strconv.ParseInt(m["retention"], 10, 64)
	out.RetentionTTL = time.Duration(ttl)
	out.CleanupLimit, _ = strconv.Atoi(m["cleanup_limit"])
	out.MaxRunning, _ = strconv.Atoi(m["max_running"])
	return out, nil
}

// PutQueueConfig stores cfg, replacing the queue's config. Claims that start
// after it returns see it.
func (b *Backend) PutQueueConfig(ctx context.Context, cfg core.QueueConfig) error {
	if err := b.check("put queue config"); err != nil {
		return err
	}
	if err := core.ValidateQueueConfig(cfg); err != nil {
		return err
	}
	paused := "0"
	if cfg.Paused {
		paused = "1"
	}
	key := b.ks.queueKeys(cfg.Queue)[kConf]
	if err := b.rdb.HSet(ctx, key, "paused", paused, "retention", int64(cfg.RetentionTTL), "cleanup_limit", cfg.CleanupLimit, "max_running", cfg.MaxRunning).Err(); err != nil {
		return wrap("put queue config", err)
	}
	if err := b.rdb.SAdd(ctx, b.ks.queues(), cfg.Queue).Err(); err != nil {
		return wrap("put queue config", err)
	}
	return nil
}
