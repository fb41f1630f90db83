package mem

import (
	"context"

	"github.com/boson-go/boson/core"
)

var _ core.QueueDeclarer = (*Backend)(nil)

// CreateQueue declares cfg.Queue with cfg when it is not declared, or
// checks that its stored config matches cfg, as [core.QueueDeclarer]
// says. It runs under the backend's lock, so of concurrent calls exactly
// one declares the queue.
func (b *Backend) CreateQueue(ctx context.Context, cfg core.QueueConfig) (core.QueueConfig, bool, error) {
	if err := b.usable(ctx); err != nil {
		return core.QueueConfig{}, false, err
	}
	if err := core.ValidateQueueConfig(cfg); err != nil {
		return core.QueueConfig{}, false, err
	}
	if err := b.lock(ctx); err != nil {
		return core.QueueConfig{}, false, err
	}
	defer b.mu.Unlock()
	s := b.s
	prev, ok := s.queueConfigs[cfg.Queue]
	if !ok {
		prev = core.QueueConfig{Queue: cfg.Queue}
	}
	if s.declared[cfg.Queue] {
		if !core.QueueConfigsMatch(prev, cfg) {
			return prev, false, core.QueueConflict(prev, cfg)
		}
		return prev, false, nil
	}
	stored := core.DeclaredConfig(prev, cfg)
	s.queueConfigs[cfg.Queue] = stored
	s.declared[cfg.Queue] = true
	return stored, true, nil
}

// QueueDeclared reports whether queue was declared with CreateQueue and
// not deleted since.
func (b *Backend) QueueDeclared(ctx context.Context, queue string) (bool, error) {
	if err := b.usable(ctx); err != nil {
		return false, err
	}
	if err := core.ValidateName("queue", queue); err != nil {
		return false, err
	}
	if err := b.lock(ctx); err != nil {
		return false, err
	}
	defer b.mu.Unlock()
	return b.s.declared[queue], nil
}
