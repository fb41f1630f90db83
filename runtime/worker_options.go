package boson

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/boson-go/boson/core"
)

// WorkerOptions configure a [Worker]. The zero value is useful: adaptive
// handler slots (10 to start, at most 1,000) on the default queue,
// 30-second leases renewed every 10 seconds, polling at most once a second
// when idle.
type WorkerOptions struct {
	// ID identifies the worker in leases and runs. It must be unique among
	// running workers; empty means "<host>-<pid>-<random>".
	ID string
	// Queues lists the queues to serve; empty means [core.DefaultQueue].
	Queues []string
	// Concurrency, when positive, fixes how many handlers run at once. 0
	// means adaptive slots: the worker starts with 10 (or MaxConcurrency,
	// if lower), grows them fourfold while claims come back full, most
	// handlers return within 100 ms and each growth raises the rate of
	// finished handlers (a growth that does not is undone, and the size is
	// held for a while), and halves them back towards the start when most
	// handlers are slow. A handler of an
	// adaptive worker that has run for more than a second stops holding a
	// slot, up to as many such handlers as there are slots, so that a few
	// long jobs never keep short ones waiting. Either way the worker claims
	// only for free slots and keeps no local backlog. A slot frees when its
	// handler returns, so the next claim can overlap the write of the
	// outcome (at most as many outcomes as slots are pending at a time).
	Concurrency int
	// MaxConcurrency is the ceiling of adaptive slots; 0 means 1,000. It
	// may not be set together with a different Concurrency. A slot that
	// no handler needs costs nothing: runner goroutines are started when
	// a claimed job finds none idle.
	MaxConcurrency int
	// LeaseTTL is the lease the worker asks for; 0 means 30 seconds. A
	// lease is not a timeout: supervision renews it while the handler runs.
	LeaseTTL time.Duration
	// HeartbeatInterval is how often a running attempt's lease is renewed;
	// 0 means LeaseTTL/3. It may be at most LeaseTTL/2, so that a renewal
	// has half a lease to land and a failed one is tried again before the
	// lease expires (an expired lease lets another worker run the job too).
	HeartbeatInterval time.Duration
	// PollInterval is how long an idle worker waits between claims when no
	// notification arrives; 0 means one second.
	PollInterval time.Duration
	// ShutdownGrace is how long Shutdown lets running attempts finish
	// before it cancels them; 0 means 30 seconds.
	ShutdownGrace time.Duration
	// RescueInterval is the period of the rescue loop that requeues jobs
	// whose lease expired; 0 means LeaseTTL/2, so that a dead worker's
	// jobs wait at most about one and a half leases; negative disables the
	// loop.
	RescueInterval time.Duration
	// RescueLimit bounds the jobs one rescue pass changes; 0 means 1,000.
	RescueLimit int
	// RetentionInterval is the period of the retention loop that deletes
	// old terminal jobs of the served queues by each queue's stored
	// policy; 0 means one hour, negative disables the loop.
	RetentionInterval time.Duration
	// CompletionBatch bounds how many completions that finish together are
	// written in one backend call; 0 means 1,000, 1 disables batching.
	// Completions are written as they finish: a batch is whatever finished
	// while the previous write ran, so batching adds no delay.
	CompletionBatch int
	// DefaultRetry fills the zero fields of a job's retry policy; its own
	// zero fields take [DefaultRetry]'s values.
	DefaultRetry core.RetryPolicy
	// Middleware wraps every execution; the first element is the outermost.
	Middleware []Middleware
	// RunContext, when set, builds each attempt's context from the actor
	// recorded on the job.
	RunContext RunContextFunc
	// Clock must agree with the backend's clock: it dates retries, sleeps,
	// retention horizons and lease renewals (the process clock measures
	// only local timeouts and durations). nil means the process clock.
	Clock core.Clock
	// Logger receives structured logs; nil means slog.Default().
	Logger *slog.Logger
	// Codec, when set, decodes every job's input before its executor
	// sees it and encodes results and checkpoints (see [PayloadCodec]);
	// give the clients the same codec.
	Codec PayloadCodec
	// SignatureMismatch is what the worker does with a job whose recorded
	// signature its handler does not accept (see [SignaturePolicy]); zero
	// means [SignatureWait]. [OnSignatureMismatch] overrides it per task.
	SignatureMismatch SignaturePolicy
}

// Environment variables read by [WorkerOptionsFromEnv]. Durations use Go
// syntax ("30s", "1m30s"); queues are comma-separated.
const (
	EnvWorkerID          = "BOSON_WORKER_ID"
	EnvQueues            = "BOSON_QUEUES"
	EnvConcurrency       = "BOSON_CONCURRENCY"
	EnvMaxConcurrency    = "BOSON_MAX_CONCURRENCY"
	EnvLeaseTTL          = "BOSON_LEASE_TTL"
	EnvHeartbeatInterval = "BOSON_HEARTBEAT_INTERVAL"
	EnvPollInterval      = "BOSON_POLL_INTERVAL"
	EnvShutdownGrace     = "BOSON_SHUTDOWN_GRACE"
	EnvRescueInterval    = "BOSON_RESCUE_INTERVAL"
	EnvRescueLimit       = "BOSON_RESCUE_LIMIT"
	EnvRetentionInterval = "BOSON_RETENTION_INTERVAL"
)

// WorkerOptionsFromEnv returns base with every field named by a set
// environment variable (see the Env constants) replaced by its value. An
// unparsable value gives an error wrapping [core.ErrInvalidArgument].
func WorkerOptionsFromEnv(base WorkerOptions) (WorkerOptions, error) {
	return workerOptionsFrom(base, os.LookupEnv)
}

func workerOptionsFrom(o WorkerOptions, lookup func(string) (string, bool)) (WorkerOptions, error) {
	var err error
	dur := func(name string, dst *time.Duration) {
		if v, ok := lookup(name); ok && err == nil {
			d, perr := time.ParseDuration(strings.TrimSpace(v))
			if perr != nil {
				err = fmt.Errorf("%w: %s=%q: %v", core.ErrInvalidArgument, name, v, perr)
				return
			}
			*dst = d
		}
	}
	num := func(name string, dst *int) {
		if v, ok := lookup(name); ok && err == nil {
			var n int
			if _, perr := fmt.Sscan(strings.TrimSpace(v), &n); perr != nil {
				err = fmt.Errorf("%w: %s=%q is not an integer", core.ErrInvalidArgument, name, v)
				return
			}
			*dst = n
		}
	}
	if v, ok := lookup(EnvWorkerID); ok {
		o.ID = strings.TrimSpace(v)
	}
	if v, ok := lookup(EnvQueues); ok {
		o.Queues = nil
		for _, q := range strings.Split(v, ",") {
			if q = strings.TrimSpace(q); q != "" {
				o.Queues = append(o.Queues, q)
			}
		}
	}
	num(EnvConcurrency, &o.Concurrency)
	num(EnvMaxConcurrency, &o.MaxConcurrency)
	dur(EnvLeaseTTL, &o.LeaseTTL)
	dur(EnvHeartbeatInterval, &o.HeartbeatInterval)
	dur(EnvPollInterval, &o.PollInterval)
	dur(EnvShutdownGrace, &o.ShutdownGrace)
	dur(EnvRescueInterval, &o.RescueInterval)
	num(EnvRescueLimit, &o.RescueLimit)
	dur(EnvRetentionInterval, &o.RetentionInterval)
	return o, err
}

// withDefaults validates o and fills its zero fields.
func (o WorkerOptions) withDefaults() (WorkerOptions, error) {
	bad := func(format string, args ...any) (WorkerOptions, error) {
		return o, fmt.Errorf("%w: worker options: "+format, append([]any{core.ErrInvalidArgument}, args...)...)
	}
	if o.ID == "" {
		o.ID = defaultWorkerID()
	}
	if err := core.ValidateName("worker id", o.ID); err != nil {
		return o, err
	}
	if err := validateCodec(o.Codec); err != nil {
		return o, err
	}
	if err := validateSignaturePolicy(o.SignatureMismatch); err != nil {
		return o, err
	}
	if len(o.Queues) == 0 {
		o.Queues = []string{core.DefaultQueue}
	}
	seen := map[string]bool{}
	for _, q := range o.Queues {
		if err := core.ValidateName("queue", q); err != nil {
			return o, err
		}
		if seen[q] {
			return bad("queue %q is listed twice", q)
		}
		seen[q] = true
	}
	switch {
	case o.Concurrency < 0:
		return bad("concurrency %d must not be negative", o.Concurrency)
	case o.MaxConcurrency < 0:
		return bad("max concurrency %d must not be negative", o.MaxConcurrency)
	case o.Concurrency > 0 && o.MaxConcurrency > 0 && o.MaxConcurrency != o.Concurrency:
		return bad("concurrency %d fixes the slots, so max concurrency %d contradicts it: set one of them", o.Concurrency, o.MaxConcurrency)
	case o.Concurrency > 0:
		o.MaxConcurrency = o.Concurrency
	case o.MaxConcurrency == 0:
		o.MaxConcurrency = defaultMaxConcurrency
	}
	if o.LeaseTTL < 0 || o.HeartbeatInterval < 0 || o.PollInterval < 0 || o.ShutdownGrace < 0 || o.RescueLimit < 0 || o.CompletionBatch < 0 {
		return bad("durations and limits must not be negative")
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = 30 * time.Second
	}
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = o.LeaseTTL / 3
	}
	if o.HeartbeatInterval > o.LeaseTTL/2 {
		return bad("heartbeat interval %v must be at most half the lease %v", o.HeartbeatInterval, o.LeaseTTL)
	}
	if o.PollInterval == 0 {
		o.PollInterval = time.Second
	}
	if o.ShutdownGrace == 0 {
		o.ShutdownGrace = 30 * time.Second
	}
	if o.RescueInterval == 0 {
		o.RescueInterval = o.LeaseTTL / 2
	}
	if o.RescueLimit == 0 {
		o.RescueLimit = 1000
	}
	if o.RetentionInterval == 0 {
		o.RetentionInterval = time.Hour
	}
	if o.CompletionBatch == 0 {
		o.CompletionBatch = 1000
	}
	if err := core.ValidateRetryPolicy(o.DefaultRetry); err != nil {
		return o, err
	}
	o.Clock = core.ClockOrSystem(o.Clock)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// Adaptive slots: where they start and their default ceiling.
const (
	startConcurrency      = 10
	defaultMaxConcurrency = 1000
)

// adaptive reports whether the worker sizes its slots itself; o must have
// its defaults filled.
func (o WorkerOptions) adaptive() bool { return o.Concurrency == 0 }

// startSlots is the worker's slot count when it starts.
func (o WorkerOptions) startSlots() int {
	if o.adaptive() {
		return min(startConcurrency, o.MaxConcurrency)
	}
	return o.Concurrency
}

func defaultWorkerID() string {
	host, _ := os.Hostname()
	var b strings.Builder
	for _, c := range host {
		if c < 128 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b.WriteRune(c)
		}
		if b.Len() >= 64 {
			break
		}
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	name := strings.TrimLeft(b.String(), "-_")
	if name == "" {
		name = "worker"
	}
	return fmt.Sprintf("%s-%d-%s", name, os.Getpid(), hex.EncodeToString(r[:]))
}
