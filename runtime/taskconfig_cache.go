package boson

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
)

// configCache remembers task configs (and their absence) per backend for a
// short time, so that spawning does not read the config on every call.
// Limits stay exact: the backend enforces them at enqueue; only defaults
// may be up to the TTL old.
type configCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[configKey]configEntry
}

type configKey struct {
	b    core.QueueBackend
	task string
}

type configEntry struct {
	cfg     core.TaskConfig
	found   bool
	expires time.Time
}

// get returns the task's config, found=false when none is stored.
func (c *configCache) get(ctx context.Context, b core.QueueBackend, task string) (core.TaskConfig, bool, error) {
	k := configKey{b, task}
	now := time.Now()
	if c.ttl > 0 {
		c.mu.Lock()
		e, ok := c.m[k]
		c.mu.Unlock()
		if ok && now.Before(e.expires) {
			return e.cfg, e.found, nil
		}
	}
	cfg, err := b.GetTaskConfig(ctx, task)
	found := true
	switch {
	case errors.Is(err, core.ErrNotFound):
		found = false
	case err != nil:
		return cfg, false, fmt.Errorf("boson: read task config of %s: %w", task, err)
	}
	if c.ttl > 0 {
		c.mu.Lock()
		if c.m == nil {
			c.m = map[configKey]configEntry{}
		}
		if len(c.m) > 10_000 {
			clear(c.m)
		}
		c.m[k] = configEntry{cfg: cfg, found: found, expires: now.Add(c.ttl)}
		c.mu.Unlock()
	}
	return cfg, found, nil
}

// forget drops a task's cached configs after the client stored a new one.
func (c *configCache) forget(task string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if k.task == task {
			delete(c.m, k)
		}
	}
}
