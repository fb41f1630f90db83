package boson

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
)

// CreateQueue declares cfg.Queue with its config on the backend that
// serves it, or checks that the declared queue's stored config matches
// cfg; see core.QueueDeclarer. It returns the config as stored and
// whether this call declared the queue. A different stored config gives
// an error wrapping [ErrQueueConflict] and changes nothing; a backend that
// cannot declare queues gives one wrapping core.ErrUnsupported, and a
// MaxRunning on a backend without core.FlowController one wrapping
// [ErrFlowUnsupported], declaring nothing. Call it at
// startup for every queue the application uses, before spawning with
// ClientOptions.StrictQueues.
func (c *Client) CreateQueue(ctx context.Context, cfg core.QueueConfig) (core.QueueConfig, bool, error) {
	b, err := c.router.Resolve(cfg.Queue)
	if err != nil {
		return core.QueueConfig{}, false, err
	}
	if cfg.UsesFlowControl() {
		if err := core.ValidateQueueConfig(cfg); err != nil {
			return core.QueueConfig{}, false, err
		}
		if err := requireFlow(b, "queue declaration of "+cfg.Queue); err != nil {
			return core.QueueConfig{}, false, err
		}
	}
	stored, created, err := core.CreateQueue(ctx, b, cfg)
	if err != nil {
		return stored, created, fmt.Errorf("boson: create queue %s: %w", cfg.Queue, err)
	}
	c.declared.remember(b, cfg.Queue)
	return stored, created, nil
}

// QueueDeclared reports whether queue is declared on the backend that
// serves it, asking the backend (never the client's cache).
func (c *Client) QueueDeclared(ctx context.Context, queue string) (bool, error) {
	b, err := c.router.Resolve(queue)
	if err != nil {
		return false, err
	}
	return core.QueueDeclared(ctx, b, queue)
}

// DeleteQueue deletes queue with every job in it, in bounded steps of
// core.JobDeleter.DeleteQueue until none is left, and with it the queue's
// config and declaration; it returns how many jobs it deleted. This
// client's strict mode forgets the queue at once. A backend without
// deletion gives an error wrapping core.ErrUnsupported.
func (c *Client) DeleteQueue(ctx context.Context, queue string) (int, error) {
	b, err := c.router.Resolve(queue)
	if err != nil {
		return 0, err
	}
	jd, ok := b.(core.JobDeleter)
	if !ok {
		return 0, fmt.Errorf("%w: %T cannot delete queues", core.ErrUnsupported, b)
	}
	c.declared.forget(b, queue)
	defer c.declared.forget(b, queue)
	deleted := 0
	for {
		res, err := jd.DeleteQueue(ctx, core.DeleteQueueRequest{Queue: queue, Limit: deleteQueueStep})
		deleted += res.Deleted
		if err != nil {
			return deleted, fmt.Errorf("boson: delete queue %s: %w", queue, err)
		}
		if res.Done {
			return deleted, nil
		}
	}
}

// deleteQueueStep is how many jobs one step of Client.DeleteQueue deletes:
// within every backend's default batch limit.
const deleteQueueStep = 500

// initStrict checks, for a strict client, that every backend can tell
// declared queues, and sets the cache's lifetime.
func (c *Client) initStrict() error {
	c.declared.ttl = c.opts.DeclaredQueueTTL
	if c.declared.ttl == 0 {
		c.declared.ttl = time.Second
	}
	if !c.opts.StrictQueues {
		return nil
	}
	for _, name := range c.router.Names() {
		b, err := c.router.Backend(name)
		if err != nil {
			return err
		}
		if _, ok := b.(core.QueueDeclarer); !ok {
			return fmt.Errorf("%w: StrictQueues needs backends that declare queues; %s (%T) does not", core.ErrUnsupported, name, b)
		}
	}
	return nil
}

// checkDeclared refuses, in strict mode, a batch with a request to a
// queue that b does not hold declared. The error names the first such
// request, as a [core.BatchError] like every other refusal of a batch.
func (c *Client) checkDeclared(ctx context.Context, b core.QueueBackend, ers []core.EnqueueRequest) error {
	if !c.opts.StrictQueues {
		return nil
	}
	checked := map[string]bool{}
	for i, er := range ers {
		if checked[er.Queue] {
			continue
		}
		checked[er.Queue] = true
		if c.declared.fresh(b, er.Queue) {
			continue
		}
		ok, err := core.QueueDeclared(ctx, b, er.Queue)
		if err != nil {
			return &core.BatchError{Index: i, Err: fmt.Errorf("boson: check that queue %s is declared: %w", er.Queue, err)}
		}
		if !ok {
			return &core.BatchError{Index: i, Err: fmt.Errorf("%w: queue %q; declare it with CreateQueue first (the client has StrictQueues set)", ErrQueueNotDeclared, er.Queue)}
		}
		c.declared.remember(b, er.Queue)
	}
	return nil
}

// declaredCache remembers, per backend, the queues a strict client found
// declared, each for ttl. Only positive answers are kept: an undeclared
// queue is asked again on every spawn.
type declaredCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[declaredKey]time.Time // expiry
}

type declaredKey struct {
	b     core.QueueBackend
	queue string
}

func (d *declaredCache) fresh(b core.QueueBackend, queue string) bool {
	if d.ttl < 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	exp, ok := d.m[declaredKey{b, queue}]
	return ok && time.Now().Before(exp)
}

func (d *declaredCache) remember(b core.QueueBackend, queue string) {
	if d.ttl < 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[declaredKey]time.Time{}
	}
	if len(d.m) > 10_000 {
		clear(d.m)
	}
	d.m[declaredKey{b, queue}] = time.Now().Add(d.ttl)
}

func (d *declaredCache) forget(b core.QueueBackend, queue string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, declaredKey{b, queue})
}
