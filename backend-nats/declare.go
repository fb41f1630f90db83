package natsq

import (
	"context"

	"github.com/boson-go/boson/core"
)

var _ core.QueueDeclarer = (*Backend)(nil)

// CreateQueue implements core.QueueDeclarer. The declaration is one
// command of the log (version 4): every replica declares the queue, or
// finds it declared and checks the config, at the same position, so of
// concurrent calls the one whose command comes first declares it and the
// others see its config.
func (b *Backend) CreateQueue(ctx context.Context, cfg core.QueueConfig) (core.QueueConfig, bool, error) {
	if err := b.isClosed(); err != nil {
		return core.QueueConfig{}, false, err
	}
	if err := core.ValidateQueueConfig(cfg); err != nil {
		return core.QueueConfig{}, false, err
	}
	out, err := b.exec(ctx, &command{Op: opCreateQueue, V: declareVersion, Now: b.stamp(), QueueConfig: &cfg})
	if err != nil {
		return core.QueueConfig{}, false, err
	}
	return out.queueCfg, out.done, out.err
}

// QueueDeclared implements core.QueueDeclarer, on this replica once it
// has applied the log as far as reads do.
func (b *Backend) QueueDeclared(ctx context.Context, queue string) (bool, error) {
	if err := b.readable(ctx); err != nil {
		return false, err
	}
	if err := core.ValidateName("queue", queue); err != nil {
		return false, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.st.declared[queue], nil
}

// applyCreateQueue declares c.QueueConfig's queue, or checks it against
// the declared config; done reports that it declared the queue.
func (s *state) applyCreateQueue(c *command) outcome {
	if c.QueueConfig == nil {
		return outcome{err: core.ErrInvalidArgument}
	}
	cfg := *c.QueueConfig
	prev, ok := s.queueCfg[cfg.Queue]
	if !ok {
		prev = core.QueueConfig{Queue: cfg.Queue}
	}
	if s.declared[cfg.Queue] {
		if !core.QueueConfigsMatch(prev, cfg) {
			return outcome{queueCfg: prev, err: core.QueueConflict(prev, cfg)}
		}
		return outcome{queueCfg: prev}
	}
	stored := core.DeclaredConfig(prev, cfg)
	s.queueCfg[cfg.Queue] = stored
	s.declared[cfg.Queue] = true
	s.touched[cfg.Queue] = struct{}{}
	return outcome{queueCfg: stored, done: true}
}
