package boson

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/boson-go/boson/core"
)

// ClientOptions configure a [Client]. The zero value is useful.
type ClientOptions struct {
	// Clock computes delays (WithDelay) and must agree with the backend's
	// clock; nil means the process clock.
	Clock core.Clock
	// Actor is the default actor recorded on spawns whose context and
	// options name none.
	Actor string
	// ActorPolicy, when set, may reject a spawn by its actor.
	ActorPolicy ActorPolicy
	// PollInterval caps the interval at which Wait polls a job's state when
	// the backend sends no notifications (or a signal was missed); zero
	// means one second.
	PollInterval time.Duration
	// Logger receives the client's structured logs; nil means slog.Default().
	Logger *slog.Logger
	// Codec, when set, encodes every spawn's input and decodes results
	// (see [PayloadCodec]); give the workers the same codec.
	Codec PayloadCodec
	// TaskConfigTTL is how long the client reuses a task config it read
	// (or the fact that none is stored) when applying defaults at spawn;
	// zero means one second, negative reads the config on every spawn.
	// Configs stored through this client take effect at once; the limits
	// of a config are always enforced by the backend.
	TaskConfigTTL time.Duration
	// StrictQueues refuses every spawn (Spawn, SpawnBatch, SpawnRequests
	// and their transactional forms) to a queue that is not declared (see
	// [Client.CreateQueue]) with an error wrapping [ErrQueueNotDeclared],
	// before anything is stored. The default queue must be declared too.
	// Every backend of the client must implement core.QueueDeclarer, or
	// NewClient fails with an error wrapping core.ErrUnsupported.
	StrictQueues bool
	// DeclaredQueueTTL is how long a strict client trusts that a queue it
	// found declared still is; zero means one second, negative checks on
	// every spawn. A queue found undeclared is asked again on the next
	// spawn, so a queue declared by another process is usable at once. A
	// queue deleted through this client is forgotten at once; one deleted
	// by another process may still take spawns for up to this long.
	DeclaredQueueTTL time.Duration
}

// Client spawns tasks and inspects them. It is safe for concurrent use and
// holds no goroutines of its own: an enqueue-only process needs nothing but
// a Client.
type Client struct {
	router   *core.Router
	opts     ClientOptions
	clock    core.Clock
	log      *slog.Logger
	configs  configCache
	declared declaredCache
	metrics  clientMetrics
}

// NewClient returns a client over one backend.
func NewClient(b core.QueueBackend, opts ClientOptions) (*Client, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: backend must not be nil", core.ErrInvalidArgument)
	}
	return NewRouterClient(core.NewRouter(b), opts)
}

// NewRouterClient returns a client that spreads queues across the backends
// of r: each spawn goes to the backend r resolves for its queue.
func NewRouterClient(r *core.Router, opts ClientOptions) (*Client, error) {
	if r == nil || len(r.Names()) == 0 {
		return nil, fmt.Errorf("%w: router must have at least one backend", core.ErrInvalidArgument)
	}
	if opts.PollInterval < 0 {
		return nil, fmt.Errorf("%w: poll interval %v must not be negative", core.ErrInvalidArgument, opts.PollInterval)
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = time.Second
	}
	if err := validateCodec(opts.Codec); err != nil {
		return nil, err
	}
	if opts.TaskConfigTTL == 0 {
		opts.TaskConfigTTL = time.Second
	}
	c := &Client{router: r, opts: opts, clock: core.ClockOrSystem(opts.Clock), log: opts.Logger}
	c.configs.ttl = opts.TaskConfigTTL
	if err := c.initStrict(); err != nil {
		return nil, err
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	return c, nil
}

// Router returns the client's router.
func (c *Client) Router() *core.Router { return c.router }

// Backend returns the backend that serves queue ("" is the default queue).
func (c *Client) Backend(queue string) (core.QueueBackend, error) { return c.router.Resolve(queue) }

// Request is one prepared spawn: the task's name, the encoded input and the
// chosen options, not yet sent. Build one with [Task.Request] and send
// several together with [Client.SpawnRequests].
type Request struct {
	task  string
	input []byte
	cfg   spawnConfig
	err   error
}

// Request prepares a spawn of t with input in without sending it.
func (t Task[In, Out]) Request(in In, opts ...SpawnOption) Request {
	r := Request{task: t.name}
	r.input, r.err = encode("input", in)
	for _, o := range opts {
		if o != nil {
			o(&r.cfg)
		}
	}
	if r.err == nil {
		if r.err = validateSignature(t.sig); r.err == nil {
			r.err = stampSignature(&r.cfg, t.sig)
		}
	}
	return r
}

// build turns a request into the backend request and the backend to send it to.
func (c *Client) build(ctx context.Context, r Request) (core.EnqueueRequest, core.QueueBackend, error) {
	if r.err != nil {
		return core.EnqueueRequest{}, nil, r.err
	}
	if err := core.ValidateName("task", r.task); err != nil {
		return core.EnqueueRequest{}, nil, err
	}
	cfg := r.cfg
	req := core.EnqueueRequest{
		Queue:          cfg.queue,
		Task:           r.task,
		Payload:        r.input,
		Headers:        cfg.headers,
		Priority:       cfg.priority,
		MaxAttempts:    cfg.maxAttempts,
		Retry:          cfg.retry,
		Cancel:         cfg.cancel,
		IdempotencyKey: cfg.idempotencyKey,
	}
	if cfg.maxAttempts < 0 {
		return req, nil, fmt.Errorf("%w: max attempts %d must be at least 1", core.ErrInvalidArgument, cfg.maxAttempts)
	}
	if cfg.delay < 0 {
		return req, nil, fmt.Errorf("%w: delay %v must not be negative", core.ErrInvalidArgument, cfg.delay)
	}
	if err := applyFlow(&req, cfg); err != nil {
		return req, nil, err
	}
	// The fingerprint covers what the caller asked for, before task-config
	// defaults, so that changing a config does not break idempotent retries.
	req.Fingerprint = core.Fingerprint(req)
	if err := c.encodeInput(&req); err != nil {
		return req, nil, err
	}

	actor := c.opts.Actor
	if a, ok := ActorFromContext(ctx); ok {
		actor = a
	}
	if cfg.actorSet {
		actor = cfg.actor
	}
	req.Actor = actor
	if c.opts.ActorPolicy != nil {
		if err := c.opts.ActorPolicy(ctx, actor, r.task); err != nil {
			return req, nil, fmt.Errorf("%w: %q may not spawn %s: %v", ErrActorRejected, actor, r.task, err)
		}
	}

	b, err := c.router.Resolve(req.Queue)
	if err != nil {
		return req, nil, err
	}
	tc, found, err := c.configs.get(ctx, b, r.task)
	switch {
	case err != nil:
		return req, nil, err
	case found:
		if req.Queue == "" && tc.Queue != "" {
			req.Queue = tc.Queue
			if b, err = c.router.Resolve(req.Queue); err != nil {
				return req, nil, err
			}
		}
		if !cfg.prioritySet {
			req.Priority = tc.Priority
		}
		if req.MaxAttempts == 0 {
			req.MaxAttempts = tc.MaxAttempts
		}
		if !cfg.retrySet {
			req.Retry = tc.Retry
		} else {
			req.Retry = mergeRetry(req.Retry, tc.Retry)
		}
	}
	if req.Queue == "" {
		req.Queue = core.DefaultQueue
	}
	switch {
	case !cfg.runAt.IsZero():
		req.RunAt = cfg.runAt
	case cfg.delay > 0:
		req.RunAt = c.clock.Now().Add(cfg.delay)
	}
	return req, b, nil
}

// SpawnRequests sends prepared requests as one atomic batch: every task is
// stored (or reused through its idempotency key) or none is. Every request
// must resolve to the same backend. Results are in request order.
func (c *Client) SpawnRequests(ctx context.Context, reqs ...Request) ([]Spawned, error) {
	return c.spawn(ctx, nil, reqs)
}

// SpawnRequestsTx is [Client.SpawnRequests] inside the caller's transaction
// tx (the store's own type, for example pgx.Tx or *sql.Tx): the tasks become
// visible when it commits and vanish if it rolls back. A backend without
// transactional enqueue returns an error wrapping [core.ErrUnsupported].
func (c *Client) SpawnRequestsTx(ctx context.Context, tx any, reqs ...Request) ([]Spawned, error) {
	if tx == nil {
		return nil, fmt.Errorf("%w: tx must not be nil", core.ErrInvalidArgument)
	}
	return c.spawn(ctx, tx, reqs)
}

// Spawned is one stored (or reused) task of a spawn.
type Spawned struct {
	Job core.Job
	// Reused reports that an idempotency key matched an existing task.
	Reused bool
	b      core.QueueBackend
}

func (c *Client) spawn(ctx context.Context, tx any, reqs []Request) ([]Spawned, error) {
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%w: nothing to spawn", core.ErrInvalidArgument)
	}
	ers := make([]core.EnqueueRequest, len(reqs))
	var backend core.QueueBackend
	for i, r := range reqs {
		er, b, err := c.build(ctx, r)
		if err != nil {
			return nil, &core.BatchError{Index: i, Err: err}
		}
		if backend == nil {
			backend = b
		} else if backend != b {
			return nil, &core.BatchError{Index: i, Err: fmt.Errorf("%w: queue %q is served by another backend than the rest of the batch", core.ErrInvalidArgument, er.Queue)}
		}
		if er.UsesFlowControl() {
			if err := requireFlow(b, "spawn "+er.Task); err != nil {
				return nil, &core.BatchError{Index: i, Err: err}
			}
		}
		ers[i] = er
	}
	if err := c.checkDeclared(ctx, backend, ers); err != nil {
		return nil, err
	}
	res, err := c.enqueue(ctx, backend, tx, ers)
	if err != nil {
		if len(reqs) == 1 {
			var be *core.BatchError
			if errors.As(err, &be) {
				err = be.Err
			}
		}
		return nil, fmt.Errorf("boson: spawn: %w", err)
	}
	out := make([]Spawned, len(res))
	debug := c.log.Enabled(ctx, slog.LevelDebug)
	for i, r := range res {
		out[i] = Spawned{Job: r.Job, Reused: r.Reused, b: backend}
		if debug {
			c.log.DebugContext(ctx, "boson: spawned", "task", r.Job.Task, "job_id", r.Job.ID, "queue", r.Job.Queue, "reused", r.Reused)
		}
	}
	return out, nil
}

// Spawn stores one task of type t with input in and returns its typed handle.
func Spawn[In, Out any](ctx context.Context, c *Client, t Task[In, Out], in In, opts ...SpawnOption) (*Handle[Out], error) {
	s, err := c.spawn(ctx, nil, []Request{t.Request(in, opts...)})
	if err != nil {
		return nil, err
	}
	return newHandle[Out](c, s[0]), nil
}

// SpawnTx is [Spawn] inside the caller's transaction tx; see
// [Client.SpawnRequestsTx].
func SpawnTx[In, Out any](ctx context.Context, c *Client, tx any, t Task[In, Out], in In, opts ...SpawnOption) (*Handle[Out], error) {
	s, err := c.SpawnRequestsTx(ctx, tx, t.Request(in, opts...))
	if err != nil {
		return nil, err
	}
	return newHandle[Out](c, s[0]), nil
}

// SpawnBatch stores one task of type t per input, all with the same options,
// as one atomic batch, and returns their handles in input order.
func SpawnBatch[In, Out any](ctx context.Context, c *Client, t Task[In, Out], ins []In, opts ...SpawnOption) ([]*Handle[Out], error) {
	reqs := make([]Request, len(ins))
	for i, in := range ins {
		reqs[i] = t.Request(in, opts...)
	}
	s, err := c.spawn(ctx, nil, reqs)
	if err != nil {
		return nil, err
	}
	hs := make([]*Handle[Out], len(s))
	for i := range s {
		hs[i] = newHandle[Out](c, s[i])
	}
	return hs, nil
}

// HandleFor rebuilds the typed handle of an existing job of task t, for
// example from an id stored elsewhere. It fails with [core.ErrNotFound] when
// no backend of the client holds the job, and with
// [core.ErrInvalidArgument] when the job belongs to another task.
func HandleFor[In, Out any](ctx context.Context, c *Client, t Task[In, Out], jobID string) (*Handle[Out], error) {
	j, b, err := c.find(ctx, jobID)
	if err != nil {
		return nil, err
	}
	if j.Task != t.name {
		return nil, fmt.Errorf("%w: job %s is a %s task, not %s", core.ErrInvalidArgument, jobID, j.Task, t.name)
	}
	return newHandle[Out](c, Spawned{Job: j, b: b}), nil
}

// find looks a job up on every backend of the router.
func (c *Client) find(ctx context.Context, jobID string) (core.Job, core.QueueBackend, error) {
	var firstErr error
	for _, b := range c.router.Backends() {
		j, err := b.GetJob(ctx, jobID)
		if err == nil {
			return j, b, nil
		}
		if !errors.Is(err, core.ErrNotFound) && firstErr == nil {
			firstErr = err
		}
	}
	if firstErr != nil {
		return core.Job{}, nil, firstErr
	}
	return core.Job{}, nil, fmt.Errorf("%w: job %s", core.ErrNotFound, jobID)
}

// GetJob returns a job from whichever backend of the client holds it.
func (c *Client) GetJob(ctx context.Context, jobID string) (core.Job, error) {
	j, _, err := c.find(ctx, jobID)
	return j, err
}

// Cancel cancels a job by id; see [Handle.Cancel].
func (c *Client) Cancel(ctx context.Context, jobID, reason string) (core.Job, error) {
	_, b, err := c.find(ctx, jobID)
	if err != nil {
		return core.Job{}, err
	}
	return b.Cancel(ctx, jobID, reason)
}

// Retry queues a failed or cancelled job again; see [Handle.Retry].
func (c *Client) Retry(ctx context.Context, jobID string) (core.Job, error) {
	_, b, err := c.find(ctx, jobID)
	if err != nil {
		return core.Job{}, err
	}
	return b.Retry(ctx, jobID)
}

// PutTaskConfig stores a task's defaults and limits on the backend that
// serves cfg.Queue (the default backend when it is empty), and on the
// default backend too when that is another one. A config with flow limits
// (see [FlowLimits]) fails with an error wrapping [ErrFlowUnsupported],
// storing nothing, when one of those backends does not implement
// [core.FlowController].
func (c *Client) PutTaskConfig(ctx context.Context, cfg core.TaskConfig) error {
	defer c.configs.forget(cfg.Task)
	b, err := c.router.Resolve(cfg.Queue)
	if err != nil {
		return err
	}
	var def core.QueueBackend
	if cfg.Queue != "" {
		if d, err := c.router.Resolve(""); err == nil && d != b {
			def = d
		}
	}
	if cfg.UsesFlowControl() {
		if err := core.ValidateTaskConfig(cfg); err != nil {
			return err
		}
		for _, x := range []core.QueueBackend{b, def} {
			if x == nil {
				continue
			}
			if err := requireFlow(x, "task config of "+cfg.Task); err != nil {
				return err
			}
		}
	}
	if def != nil {
		if err := def.PutTaskConfig(ctx, cfg); err != nil {
			return err
		}
	}
	return b.PutTaskConfig(ctx, cfg)
}

// PutQueueConfig stores a queue's settings (pause, retention policy,
// running limit) on the backend that serves it. A config with MaxRunning
// fails with an error wrapping [ErrFlowUnsupported], storing nothing, when
// that backend does not implement [core.FlowController].
func (c *Client) PutQueueConfig(ctx context.Context, cfg core.QueueConfig) error {
	b, err := c.router.Resolve(cfg.Queue)
	if err != nil {
		return err
	}
	if cfg.UsesFlowControl() {
		if err := core.ValidateQueueConfig(cfg); err != nil {
			return err
		}
		if err := requireFlow(b, "queue config of "+cfg.Queue); err != nil {
			return err
		}
	}
	return b.PutQueueConfig(ctx, cfg)
}
