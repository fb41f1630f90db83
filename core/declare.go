package core

import (
	"context"
	"fmt"
)

// ErrQueueConflict: CreateQueue found the queue declared with a config that
// does not match the one asked for. Nothing was changed. It wraps
// [ErrIdempotencyConflict], since a repeated CreateQueue is an idempotent
// request that came back with different arguments, so callers and
// transports that already handle that conflict (HTTP 409) handle this one.
var ErrQueueConflict = fmt.Errorf("%w: queue declared with another config", ErrIdempotencyConflict)

// ErrQueueNotDeclared: a strict client refused to spawn to a queue that is
// not declared. Nothing was stored. It wraps [ErrNotFound]: the queue's
// declaration does not exist.
var ErrQueueNotDeclared = fmt.Errorf("%w: queue not declared", ErrNotFound)

// QueueDeclarer is an optional capability: declaring queues with their
// config, checked again on every repeat.
//
// Queues are implicit: enqueueing to a name makes the queue, so a typo in
// a queue name parks jobs that no worker will ever claim. A store that
// implements [QueueDeclarer] lets an application declare its queues
// instead, once, with their settings, and a client in strict mode (see
// the runtime's ClientOptions.StrictQueues) refuses to spawn to a queue
// that is not declared. Declaring is opt-in: undeclared queues keep
// working exactly as before for every caller that does not ask for strict
// mode.
//
// The rules every store follows:
//
//   - A queue is declared only by [QueueDeclarer.CreateQueue]. A config
//     stored with [QueueBackend.PutQueueConfig] (pausing a queue, setting
//     its retention) does not declare it, and jobs in a queue do not
//     either.
//   - CreateQueue is atomic and idempotent. On an undeclared queue it
//     declares the queue and stores cfg as its config, except that a queue
//     already paused stays paused (declaring never resumes a queue); it
//     returns that stored config and created=true. On a declared queue
//     whose stored config matches cfg (see [QueueConfigsMatch]) it changes
//     nothing and returns the stored config and created=false. On a
//     declared queue whose stored config differs it changes nothing and
//     returns the stored config with an error wrapping [ErrQueueConflict].
//     Of several concurrent CreateQueue calls on one undeclared queue
//     exactly one reports created=true; the others see its config.
//   - PutQueueConfig on a declared queue replaces its config and keeps it
//     declared, so an operator may change a declared queue's settings; the
//     application's next CreateQueue with the old settings then reports the
//     conflict, which is what "verifies the stored config" means here.
//   - [JobDeleter.DeleteQueue] removes the declaration in the step that
//     reports Done, with the config: a deleted queue is undeclared.
//   - [QueueBackend.ListQueues] lists every declared queue (a declared
//     queue always has a stored config) with [QueueInfo.Declared] set.
type QueueDeclarer interface {
	// CreateQueue validates cfg with [ValidateQueueConfig] and declares
	// cfg.Queue with it if the queue is not declared (created=true), or
	// checks that the declared queue's stored config matches cfg
	// (created=false, or an error wrapping [ErrQueueConflict] when it does
	// not). It returns the queue's config as stored after the call, also
	// on a conflict.
	CreateQueue(ctx context.Context, cfg QueueConfig) (stored QueueConfig, created bool, err error)

	// QueueDeclared reports whether queue is declared. An invalid name
	// gives [ErrInvalidArgument].
	QueueDeclared(ctx context.Context, queue string) (bool, error)
}

// QueueConfigsMatch reports whether a and b declare the same queue with the
// same settings: every field is equal except Paused, which is the queue's
// operational state (an operator may pause and resume a declared queue
// without making the application's CreateQueue fail). A field added to
// [QueueConfig] later takes part in the comparison by default.
func QueueConfigsMatch(a, b QueueConfig) bool {
	a.Paused, b.Paused = false, false
	return a == b
}

// DeclaredConfig is the config CreateQueue stores when it declares a queue
// whose config so far is prev (the zero config when none is stored): cfg,
// paused when either is paused.
func DeclaredConfig(prev, cfg QueueConfig) QueueConfig {
	cfg.Paused = cfg.Paused || prev.Paused
	return cfg
}

// QueueConflict returns the error CreateQueue reports when the declared
// queue's stored config differs from the one asked for; it wraps
// [ErrQueueConflict] and names both.
func QueueConflict(stored, asked QueueConfig) error {
	return fmt.Errorf("%w: queue %q is declared with retention_ttl %v, cleanup_limit %d, max_running %d; asked for retention_ttl %v, cleanup_limit %d, max_running %d", ErrQueueConflict, stored.Queue, stored.RetentionTTL, stored.CleanupLimit, stored.MaxRunning, asked.RetentionTTL, asked.CleanupLimit, asked.MaxRunning)
}

// CreateQueue declares cfg.Queue on b when b implements [QueueDeclarer],
// and returns an error wrapping [ErrUnsupported] otherwise.
func CreateQueue(ctx context.Context, b QueueBackend, cfg QueueConfig) (QueueConfig, bool, error) {
	qd, ok := b.(QueueDeclarer)
	if !ok {
		return QueueConfig{}, false, fmt.Errorf("%w: %T cannot declare queues", ErrUnsupported, b)
	}
	return qd.CreateQueue(ctx, cfg)
}

// QueueDeclared reports whether queue is declared on b when b implements
// [QueueDeclarer], and returns an error wrapping [ErrUnsupported]
// otherwise.
func QueueDeclared(ctx context.Context, b QueueBackend, queue string) (bool, error) {
	qd, ok := b.(QueueDeclarer)
	if !ok {
		return false, fmt.Errorf("%w: %T cannot declare queues", ErrUnsupported, b)
	}
	return qd.QueueDeclared(ctx, queue)
}
