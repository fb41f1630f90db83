package mem

import (
	"context"
	"fmt"

	"github.com/boson-go/boson/core"
)

// GetTaskConfig returns the stored config of a task, or [core.ErrNotFound].
func (b *Backend) GetTaskConfig(ctx context.Context, task string) (core.TaskConfig, error) {
	if err := b.usable(ctx); err != nil {
		return core.TaskConfig{}, err
	}
	if err := core.ValidateName("task", task); err != nil {
		return core.TaskConfig{}, err
	}
	if err := b.lock(ctx); err != nil {
		return core.TaskConfig{}, err
	}
	defer b.mu.Unlock()
	cfg, ok := b.s.taskConfigs[task]
	if !ok {
		return core.TaskConfig{}, fmt.Errorf("%w: task config %q", core.ErrNotFound, task)
	}
	return cfg, nil
}

// PutTaskConfig validates cfg and stores it, replacing any config of the
// same task. Its limits apply to every Enqueue that starts after it
// returns, and its flow limits to every claim: jobs that a loosened limit
// no longer holds back are admitted at once.
func (b *Backend) PutTaskConfig(ctx context.Context, cfg core.TaskConfig) error {
	if err := b.usable(ctx); err != nil {
		return err
	}
	if err := core.ValidateTaskConfig(cfg); err != nil {
		return err
	}
	if err := b.lock(ctx); err != nil {
		return err
	}
	defer b.mu.Unlock()
	s := b.s
	s.taskConfigs[cfg.Task] = cfg
	if t := s.tasks[cfg.Task]; t != nil || cfg.UsesFlowControl() {
		t = s.task(cfg.Task)
		if lim := limitsOf(cfg); lim != t.flow {
			t.flow = lim
			s.holdSignals()
			s.reflow(t, b.now())
			s.releaseSignals()
		}
	}
	return nil
}

// GetQueueConfig returns the stored config of a queue, or the zero config
// with Queue set when none is stored.
func (b *Backend) GetQueueConfig(ctx context.Context, queue string) (core.QueueConfig, error) {
	if err := b.usable(ctx); err != nil {
		return core.QueueConfig{}, err
	}
	if err := core.ValidateName("queue", queue); err != nil {
		return core.QueueConfig{}, err
	}
	if err := b.lock(ctx); err != nil {
		return core.QueueConfig{}, err
	}
	defer b.mu.Unlock()
	cfg, ok := b.s.queueConfigs[queue]
	if !ok {
		cfg = core.QueueConfig{Queue: queue}
	}
	return cfg, nil
}

// PutQueueConfig validates cfg and stores it, replacing any config of the
// same queue. It takes effect for every claim that starts after it returns;
// resuming a paused queue signals its subscribers.
func (b *Backend) PutQueueConfig(ctx context.Context, cfg core.QueueConfig) error {
	if err := b.usable(ctx); err != nil {
		return err
	}
	if err := core.ValidateQueueConfig(cfg); err != nil {
		return err
	}
	if err := b.lock(ctx); err != nil {
		return err
	}
	defer b.mu.Unlock()
	wasPaused := b.s.queueConfigs[cfg.Queue].Paused
	b.s.queueConfigs[cfg.Queue] = cfg
	if wasPaused && !cfg.Paused {
		b.s.signal(cfg.Queue)
	}
	return nil
}
