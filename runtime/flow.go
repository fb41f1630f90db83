package boson

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/boson-go/boson/core"
)

// ErrFlowUnsupported: a spawn set a limit key, a sequence key or a unique
// mode, or a config set a flow limit, against a backend that does not
// implement [core.FlowController] and so would not enforce it. Nothing was
// stored. It wraps [core.ErrUnsupported].
var ErrFlowUnsupported = fmt.Errorf("%w: the backend does not enforce flow control (core.FlowController)", core.ErrUnsupported)

// WithLimitKey gives the job a limit key (a tenant, say): the task's
// per-key limits, [FlowLimits.MaxRunningPerKey] and
// [FlowLimits.MaxStartsPerSecondPerKey], count the running jobs and starts
// of each key apart. The key follows [core.ValidateName]; empty means no
// key, and the per-key limits do not apply to the job. Needs a backend that
// implements [core.FlowController].
func WithLimitKey(key string) SpawnOption {
	return func(c *spawnConfig) { c.limitKey = key }
}

// WithSequenceKey puts the job in a sequence: the jobs of one queue that
// share key run one at a time, in spawn (job id) order, each starting only
// once the one before is terminal (see [FlowLimits.HoldSequenceOnFailure]
// for failures). Jobs of other keys and jobs without one are never delayed
// by it. The key follows [core.ValidateName]. Needs a backend that
// implements [core.FlowController].
func WithSequenceKey(key string) SpawnOption {
	return func(c *spawnConfig) { c.sequenceKey = key }
}

// WithUnique sets how long the spawn's idempotency key (from
// [WithIdempotencyKey] or [WithUniqueArgs]) holds:
// [core.UniqueUntilRetention] (the default), [core.UniqueWhileActive] (the
// key is free again once the job is terminal) or [core.UniqueByPeriod]
// (prefer [WithUniquePeriod], which sets the period too). A mode other than
// the default needs a key and a backend that implements
// [core.FlowController].
func WithUnique(mode core.UniqueMode) SpawnOption {
	return func(c *spawnConfig) {
		c.unique = mode
		if mode != core.UniqueByPeriod {
			c.uniquePeriod = 0
		}
	}
}

// WithUniquePeriod selects [core.UniqueByPeriod] with windows of period
// (1 s to [core.MaxUniquePeriod], aligned to multiples of it since the Unix
// epoch on the store's clock): one job per key per window.
func WithUniquePeriod(period time.Duration) SpawnOption {
	return func(c *spawnConfig) { c.unique, c.uniquePeriod = core.UniqueByPeriod, period }
}

// WithUniqueArgs derives the spawn's idempotency key from the task name
// and the canonical JSON of the input (see [UniqueArgsKey] and
// [CanonicalJSON]), so that spawns of the same task with equal arguments
// share one job for as long as the key holds ([WithUnique] and
// [WithUniquePeriod] choose how long; by default until retention). The
// spawn also stores the canonical form as the job's input, so two spawns
// whose inputs differ only in key order or white space have the same
// fingerprint and the second is Reused; options that differ (headers,
// priority, ...) still make it an [core.ErrIdempotencyConflict]. It may not
// be combined with [WithIdempotencyKey]. The default mode works on every
// backend; the other modes need a [core.FlowController].
func WithUniqueArgs() SpawnOption {
	return func(c *spawnConfig) { c.uniqueArgs = true }
}

// applyFlow copies the flow options into req, derives the key of
// WithUniqueArgs and checks the result.
func applyFlow(req *core.EnqueueRequest, cfg spawnConfig) error {
	req.LimitKey = cfg.limitKey
	req.SequenceKey = cfg.sequenceKey
	req.Unique = cfg.unique
	req.UniquePeriod = cfg.uniquePeriod
	if cfg.uniqueArgs {
		if cfg.idempotencyKey != "" {
			return fmt.Errorf("%w: WithUniqueArgs derives the idempotency key, so WithIdempotencyKey(%q) may not be given too", core.ErrInvalidArgument, cfg.idempotencyKey)
		}
		canon, err := CanonicalJSON(req.Payload)
		if err != nil {
			return fmt.Errorf("unique args of %s: %w", req.Task, err)
		}
		req.Payload = canon
		req.IdempotencyKey = uniqueArgsKey(req.Task, canon)
	}
	// The core rules, on the flow fields alone (the backend checks the
	// rest against its own limits).
	return core.ValidateRequest(core.EnqueueRequest{
		Task:           req.Task,
		IdempotencyKey: req.IdempotencyKey,
		Unique:         req.Unique,
		UniquePeriod:   req.UniquePeriod,
		LimitKey:       req.LimitKey,
		SequenceKey:    req.SequenceKey,
	}, core.Limits{})
}

// requireFlow returns an error wrapping [ErrFlowUnsupported] unless b
// implements [core.FlowController].
func requireFlow(b core.QueueBackend, what string) error {
	if _, ok := b.(core.FlowController); ok {
		return nil
	}
	return fmt.Errorf("boson: %s: %w", what, ErrFlowUnsupported)
}

// FlowLimits are the flow limits of one task, the flow fields of its
// [core.TaskConfig], enforced by the store at claim across every worker
// and process. 0 means no limit; each lies in [0, core.MaxFlowLimit].
type FlowLimits struct {
	// MaxRunning caps the task's running jobs, across every queue.
	MaxRunning int
	// MaxRunningPerKey caps the task's running jobs of each limit key
	// ([WithLimitKey]); jobs without a key are not limited by it.
	MaxRunningPerKey int
	// MaxStartsPerSecond caps the task's claims in each second of the
	// store's clock (a wake from a sleep counts as a start).
	MaxStartsPerSecond int
	// MaxStartsPerSecondPerKey caps those claims per limit key.
	MaxStartsPerSecondPerKey int
	// HoldSequenceOnFailure keeps a failed job at the head of its
	// sequence ([WithSequenceKey]) until it is retried or deleted; by
	// default a failed job releases its sequence.
	HoldSequenceOnFailure bool
}

// FlowLimitsOf returns the flow limits of a task config.
func FlowLimitsOf(c core.TaskConfig) FlowLimits {
	return FlowLimits{
		MaxRunning:               c.MaxRunning,
		MaxRunningPerKey:         c.MaxRunningPerKey,
		MaxStartsPerSecond:       c.MaxStartsPerSecond,
		MaxStartsPerSecondPerKey: c.MaxStartsPerSecondPerKey,
		HoldSequenceOnFailure:    c.HoldSequenceOnFailure,
	}
}

// Apply returns c with its flow fields replaced by l; the other fields are
// kept.
func (l FlowLimits) Apply(c core.TaskConfig) core.TaskConfig {
	c.MaxRunning = l.MaxRunning
	c.MaxRunningPerKey = l.MaxRunningPerKey
	c.MaxStartsPerSecond = l.MaxStartsPerSecond
	c.MaxStartsPerSecondPerKey = l.MaxStartsPerSecondPerKey
	c.HoldSequenceOnFailure = l.HoldSequenceOnFailure
	return c
}

// Validate checks the limits with the rules of [core.ValidateTaskConfig];
// errors wrap [core.ErrInvalidArgument].
func (l FlowLimits) Validate() error {
	return core.ValidateTaskConfig(l.Apply(core.TaskConfig{Task: "flow-limits"}))
}

// WithFlowLimits makes the worker store l as the task's flow limits when
// it starts: [Worker.Start] reads the task's config from the backend of
// each of the worker's queues, replaces its flow fields with l (keeping
// every other field) and writes it back when it differs. A worker that
// cannot store them does not start. Registration fails with an error
// wrapping [ErrFlowUnsupported] when l sets a limit and a backend of the
// worker does not implement [core.FlowController]. Workers of one task
// should agree on l: the last one started wins. Use
// [Client.SetFlowLimits] to change them without a worker.
func WithFlowLimits(l FlowLimits) HandlerOption {
	return func(r *registration) { r.flow = &l }
}

// checkFlowRegistration validates a registration's flow limits against the
// worker's backends.
func (w *Worker) checkFlowRegistration(r *registration) error {
	if r.flow == nil {
		return nil
	}
	if err := r.flow.Validate(); err != nil {
		return fmt.Errorf("flow limits of %s: %w", r.task, err)
	}
	if !r.flow.Apply(core.TaskConfig{}).UsesFlowControl() {
		return nil
	}
	for _, b := range w.backends() {
		if err := requireFlow(b, "flow limits of "+r.task); err != nil {
			return err
		}
	}
	return nil
}

// storeFlowLimits writes the flow limits of every registration that has
// them to each backend of the worker.
func (w *Worker) storeFlowLimits(ctx context.Context) error {
	for _, r := range w.handlers {
		if r.flow == nil {
			continue
		}
		for _, b := range w.backends() {
			if err := putFlowLimits(ctx, b, r.task, *r.flow); err != nil {
				return err
			}
		}
	}
	return nil
}

// putFlowLimits replaces the flow fields of task's config on b with l,
// creating the config when none is stored, and writes only on a change.
func putFlowLimits(ctx context.Context, b core.QueueBackend, task string, l FlowLimits) error {
	cur, err := b.GetTaskConfig(ctx, task)
	switch {
	case errors.Is(err, core.ErrNotFound):
		cur = core.TaskConfig{Task: task}
	case err != nil:
		return fmt.Errorf("boson: read task config of %s: %w", task, err)
	}
	next := l.Apply(cur)
	if next == cur {
		return nil
	}
	if next.UsesFlowControl() {
		if err := requireFlow(b, "flow limits of "+task); err != nil {
			return err
		}
	}
	if err := b.PutTaskConfig(ctx, next); err != nil {
		return fmt.Errorf("boson: store flow limits of %s: %w", task, err)
	}
	return nil
}

// SetFlowLimits replaces the flow limits of task's stored config with l,
// keeping its other fields (a task without a config gets one with only
// l), on the backends [Client.PutTaskConfig] writes to. It fails with an
// error wrapping [ErrFlowUnsupported], storing nothing, when l sets a
// limit and such a backend does not implement [core.FlowController].
func (c *Client) SetFlowLimits(ctx context.Context, task string, l FlowLimits) error {
	if err := core.ValidateName("task", task); err != nil {
		return err
	}
	if err := l.Validate(); err != nil {
		return err
	}
	cur, err := c.GetTaskConfig(ctx, task)
	switch {
	case errors.Is(err, core.ErrNotFound):
		cur = core.TaskConfig{Task: task}
	case err != nil:
		return fmt.Errorf("boson: read task config of %s: %w", task, err)
	}
	return c.PutTaskConfig(ctx, l.Apply(cur))
}
