package boson

import (
	"maps"
	"time"

	"github.com/boson-go/boson/core"
)

// SpawnOption adjusts one spawn. Options apply in order; a later option
// overrides an earlier one of the same kind.
type SpawnOption func(*spawnConfig)

type spawnConfig struct {
	queue          string
	priority       int
	prioritySet    bool
	runAt          time.Time
	delay          time.Duration
	maxAttempts    int
	retry          core.RetryPolicy
	retrySet       bool
	headers        map[string]string
	idempotencyKey string
	cancel         core.CancellationPolicy
	actor          string
	actorSet       bool

	// flow control (flow.go)
	limitKey     string
	sequenceKey  string
	unique       core.UniqueMode
	uniquePeriod time.Duration
	uniqueArgs   bool
}

// WithQueue sends the task to queue instead of the task config's queue or
// [core.DefaultQueue].
func WithQueue(queue string) SpawnOption { return func(c *spawnConfig) { c.queue = queue } }

// WithPriority sets the priority in [core.MinPriority, core.MaxPriority];
// lower values are claimed first.
func WithPriority(p int) SpawnOption {
	return func(c *spawnConfig) { c.priority, c.prioritySet = p, true }
}

// WithRunAt makes the task due at t rather than now.
func WithRunAt(t time.Time) SpawnOption {
	return func(c *spawnConfig) { c.runAt, c.delay = t, 0 }
}

// WithDelay makes the task due d after the spawn (by the client's clock).
func WithDelay(d time.Duration) SpawnOption {
	return func(c *spawnConfig) { c.delay, c.runAt = d, time.Time{} }
}

// WithMaxAttempts sets the attempt budget (at least 1).
func WithMaxAttempts(n int) SpawnOption { return func(c *spawnConfig) { c.maxAttempts = n } }

// WithRetry sets the retry backoff; zero fields take the task config's or
// [DefaultRetry]'s values when the worker computes a delay.
func WithRetry(p core.RetryPolicy) SpawnOption {
	return func(c *spawnConfig) { c.retry, c.retrySet = p, true }
}

// WithHeaders adds headers (string metadata that middleware and handlers
// can read). They take part in the idempotency fingerprint.
func WithHeaders(h map[string]string) SpawnOption {
	return func(c *spawnConfig) {
		if c.headers == nil {
			c.headers = map[string]string{}
		}
		maps.Copy(c.headers, h)
	}
}

// WithHeader adds one header.
func WithHeader(key, value string) SpawnOption {
	return WithHeaders(map[string]string{key: value})
}

// WithIdempotencyKey makes the spawn idempotent within its queue: while a
// job holds the key (by default for as long as it is retained; see
// [WithUnique] and [WithUniquePeriod]), the same request returns that job
// and a different request fails with [core.ErrIdempotencyConflict]. See
// also [WithUniqueArgs], which derives the key from the input.
func WithIdempotencyKey(key string) SpawnOption {
	return func(c *spawnConfig) { c.idempotencyKey = key }
}

// WithCancellation bounds the task with deadlines the backend enforces:
// MaxDelay before its first start, MaxDuration from its first start.
func WithCancellation(p core.CancellationPolicy) SpawnOption {
	return func(c *spawnConfig) { c.cancel = p }
}

// WithActor records who spawns the task, overriding the actor of the
// context ([WithActorContext]) and the client's default.
func WithActor(actor string) SpawnOption {
	return func(c *spawnConfig) { c.actor, c.actorSet = actor, true }
}
