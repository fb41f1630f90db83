package boson

import (
	"context"
	"time"

	"github.com/boson-go/boson/core"
)

// Retention defaults, used where a queue's stored [core.QueueConfig] leaves
// them zero.
const (
	DefaultRetentionTTL = 30 * 24 * time.Hour
	DefaultCleanupLimit = 1000
)

// cleanupQueue applies queue's stored retention policy once: it deletes at
// most the policy's limit of terminal jobs that finished before now - TTL.
func cleanupQueue(ctx context.Context, b core.QueueBackend, clock core.Clock, queue string) (int, error) {
	cfg, err := b.GetQueueConfig(ctx, queue)
	if err != nil {
		return 0, err
	}
	ttl, limit := cfg.RetentionTTL, cfg.CleanupLimit
	if ttl == 0 {
		ttl = DefaultRetentionTTL
	}
	if limit == 0 {
		limit = DefaultCleanupLimit
	}
	return b.Cleanup(ctx, core.CleanupRequest{Queue: queue, FinishedBefore: clock.Now().Add(-ttl), Limit: limit})
}

// Cleanup runs one retention pass over each served queue by its stored
// policy and returns how many jobs it deleted.
func (w *Worker) Cleanup(ctx context.Context) (int, error) {
	total := 0
	var firstErr error
	for _, q := range w.queues {
		n, err := cleanupQueue(ctx, q.b, w.clock, q.name)
		total += n
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			if ctx.Err() == nil {
				w.log.Error("boson: retention pass failed", "queue", q.name, "error", err)
			}
			continue
		}
		if n > 0 {
			w.log.Info("boson: retention deleted jobs", "queue", q.name, "deleted", n)
		}
	}
	return total, firstErr
}

// Cleanup runs one retention pass over every queue of every backend of the
// client, each by its stored policy, and returns how many jobs it deleted.
func (c *Client) Cleanup(ctx context.Context) (int, error) {
	total := 0
	for _, b := range distinct(c.router.Backends()) {
		qs, err := b.ListQueues(ctx)
		if err != nil {
			return total, err
		}
		for _, q := range qs {
			n, err := cleanupQueue(ctx, b, c.clock, q.Queue)
			total += n
			if err != nil {
				return total, err
			}
		}
	}
	return total, nil
}

// CleanupQueue runs one retention pass over one queue by its stored policy.
func (c *Client) CleanupQueue(ctx context.Context, queue string) (int, error) {
	b, err := c.router.Resolve(queue)
	if err != nil {
		return 0, err
	}
	return cleanupQueue(ctx, b, c.clock, queue)
}

func distinct(bs []core.QueueBackend) []core.QueueBackend {
	var out []core.QueueBackend
	for _, b := range bs {
		dup := false
		for _, o := range out {
			if o == b {
				dup = true
			}
		}
		if !dup {
			out = append(out, b)
		}
	}
	return out
}
