// Package boson is the runtime of the boson job queue: typed tasks, a
// client that spawns them, and workers that run them with leases, retries,
// durable steps, sleeps and awaits, on any [core.QueueBackend].
//
// # Quick start
//
// A task ties a stable name to its input and output types. Producers and
// workers share the value; nothing is registered globally.
//
//	type AddIn struct{ A, B int }
//	type AddOut struct{ Sum int }
//
//	var Add = boson.NewTask[AddIn, AddOut]("add")
//
//	backend := mem.New(mem.Options{}) // or SQLite, Postgres, Redis, NATS
//	client, _ := boson.NewClient(backend, boson.ClientOptions{})
//
//	worker, _ := boson.NewWorker(backend, boson.WorkerOptions{})
//	boson.Register(worker, Add, func(ctx context.Context, in AddIn) (AddOut, error) {
//		return AddOut{Sum: in.A + in.B}, nil
//	})
//	worker.Start(ctx)
//	defer worker.Shutdown(ctx)
//
//	h, _ := boson.Spawn(ctx, client, Add, AddIn{A: 20, B: 22})
//	out, _ := h.Wait(ctx) // out.Sum == 42
//
// The runnable version is the package Example.
//
// # Tasks, attempts and leases
//
// One spawn stores one job; each try is a run with a 1-based attempt
// number. A worker claims only free capacity (its slots: adaptive by
// default, or a fixed Concurrency), holds each claim under a lease that a
// supervisor renews every HeartbeatInterval, and fences: when a lease is lost (rescued after
// expiry, cancelled, past its max-duration deadline) the handler's context
// is cancelled and the backend refuses every later write of that attempt.
// A lease is not a timeout; use [AttemptTimeout] for one.
//
// A handler's error fails the attempt and is retried with exponential
// backoff ([DefaultRetry]: 30s doubling to an hour, with 10% jitter) until
// the attempt budget (default 5) is spent. [Permanent] fails at once,
// [Snooze] re-runs later without using an attempt, and a panic is recorded
// as a failed attempt with its stack ([PanicError]).
//
// # Durable workflow primitives
//
// [Step.Run] commits a named step's value once and replays it on later
// attempts without running the body again. [SleepFor] and [SleepUntil]
// release the claim until a wake time (the handler returns the
// [SuspendError] they give); the task then runs again from the start,
// replays its steps and passes the sleep. [Await] waits for a task in
// another queue and checkpoints its result; awaiting in the same queue is
// rejected with [ErrSameQueueAwait]. [AwaitAll] and [AwaitAny] (fan-in)
// wait for many tasks in any queue, the caller's own included: the handler
// returns the [SuspendError] they give and the worker parks the job through
// the backend's [core.Awaiter], holding no slot and no lease, until the
// store wakes it. Checkpoints are stored as "step-<name>", "sleep-<name>",
// "await-<job id>" and, for fan-in, "fanin-<hash>-until" and
// "fanin-<hash>-won".
//
// # Spawning
//
// [Spawn], [SpawnBatch] (atomic) and [SpawnTx] (inside the caller's store
// transaction, where the backend implements [core.TxEnqueuer]) take
// options: [WithQueue], [WithPriority], [WithRunAt], [WithDelay],
// [WithMaxAttempts], [WithRetry], [WithHeaders], [WithIdempotencyKey],
// [WithCancellation] and [WithActor]. A task's stored [core.TaskConfig]
// supplies defaults for what the spawn leaves unset, and the backend
// enforces its limits. The returned [Handle] waits (woken by
// [core.Notifier] where the backend has it, polling otherwise), snapshots,
// cancels and retries. Where the backend implements [core.TxController],
// [Client.CancelTx] and [Client.RetryTx] (and the Handle's) cancel and
// retry inside the caller's transaction too, taking effect at its commit.
//
// # Flow control
//
// Where the backend implements [core.FlowController], the store limits
// what runs: [WithLimitKey] and [FlowLimits] (stored by
// [Client.SetFlowLimits] or, at worker start, by [WithFlowLimits]) cap
// running jobs and start rates per task and per key; [WithSequenceKey]
// runs one key's jobs one at a time in spawn order; [WithUnique] and
// [WithUniquePeriod] choose how long an idempotency key holds, and
// [WithUniqueArgs] derives the key from the task's arguments
// ([UniqueArgsKey]). Against another backend these fail with
// [ErrFlowUnsupported] and store nothing.
//
// # Topologies
//
// Embedded: one binary holds a [Client] and a [Worker] over the same
// backend. Remote workers: producers hold only a Client (it starts no
// goroutines), and separate worker processes run Workers over the same
// store, each with a unique id (the default combines host, process id and
// a random suffix; [WorkerOptionsFromEnv] reads BOSON_WORKER_ID,
// BOSON_QUEUES, BOSON_CONCURRENCY and the other documented variables).
//
// # Operations
//
// Workers rescue expired leases in bounded passes, apply each queue's
// stored retention policy (default: 30 days, 1,000 deletions per pass),
// expose exporter-agnostic [Counters] per queue, log through log/slog, wrap
// execution in [Middleware], and shut down gracefully: stop claiming, drain
// within the grace period, then cancel and release what is left. Worker
// settings can come from environment variables ([WorkerOptionsFromEnv]).
// A [core.Router] spreads queues across backends ([NewRouterClient],
// [NewRouterWorker]).
package boson
