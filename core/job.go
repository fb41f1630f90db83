package core

import "time"

// DefaultQueue is the queue a job goes to when none is named.
const DefaultQueue = "default"

// DefaultMaxAttempts is the attempt budget of a job that names none.
const DefaultMaxAttempts = 5

// Priority bounds. A lower value is claimed first; the default is 0.
const (
	MinPriority = -1000
	MaxPriority = 1000
)

// RetryPolicy describes the backoff between attempts. The runtime computes
// delays from it; backends store it with the job so that every worker applies
// the policy the producer chose. The zero value means "the runtime's default".
type RetryPolicy struct {
	// Initial is the delay before the second attempt.
	Initial time.Duration `json:"initial,omitempty"`
	// Factor multiplies the delay after each attempt; 0 means the default, 1 is constant.
	Factor float64 `json:"factor,omitempty"`
	// Max caps the delay.
	Max time.Duration `json:"max,omitempty"`
	// Jitter is the fraction in (0, 1] by which a delay is randomly
	// shortened. 0 means the default; [NoJitter] asks for exact delays.
	Jitter float64 `json:"jitter,omitempty"`
}

// NoJitter is the RetryPolicy.Jitter that asks for no jitter at all:
// every delay is exactly Initial × Factor^(attempt-1), capped at Max. It
// is a value apart because a zero Jitter means "the default" (and stays
// so in stored jobs and in JSON, where it is left out); it is stored and
// sent as -1 and wins over any default, as every non-zero field does.
const NoJitter = -1.0

// IsZero reports whether p is the zero policy.
func (p RetryPolicy) IsZero() bool { return p == RetryPolicy{} }

// CancellationPolicy bounds a job's life with deadlines that the backend
// enforces with its clock. Zero fields mean "no deadline".
type CancellationPolicy struct {
	// MaxDelay is how long the job may wait for its first start after it was
	// enqueued. Once the job has started it no longer applies.
	MaxDelay time.Duration `json:"max_delay,omitempty"`
	// MaxDuration is how long the job may live from its first start, across
	// retries and sleeps.
	MaxDuration time.Duration `json:"max_duration,omitempty"`
}

// IsZero reports whether p sets no deadline.
func (p CancellationPolicy) IsZero() bool { return p == CancellationPolicy{} }

// EnqueueRequest is what a producer hands a backend to create one job.
// Zero fields take defaults: queue [DefaultQueue], priority 0, max attempts
// [DefaultMaxAttempts], run-at "now".
type EnqueueRequest struct {
	Queue    string            `json:"queue,omitempty"`
	Task     string            `json:"task"`
	Payload  []byte            `json:"payload,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`
	Priority int               `json:"priority,omitempty"`
	// RunAt schedules the job; zero means as soon as possible.
	RunAt       time.Time          `json:"run_at,omitempty"`
	MaxAttempts int                `json:"max_attempts,omitempty"`
	Retry       RetryPolicy        `json:"retry,omitempty"`
	Cancel      CancellationPolicy `json:"cancel,omitempty"`
	// IdempotencyKey, when set, makes the enqueue idempotent within the queue
	// for as long as the first job with this key is retained.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Fingerprint identifies the request for idempotency comparison. Empty
	// means [Fingerprint] of the request, which is what callers should want.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Actor records who enqueued the job (free-form, for policy and audit).
	Actor string `json:"actor,omitempty"`
	// Unique says how long IdempotencyKey holds the key; the zero value
	// holds it until retention. A mode other than the default needs a key.
	Unique UniqueMode `json:"unique,omitempty"`
	// UniquePeriod is the window of [UniqueByPeriod], 1 s to
	// [MaxUniquePeriod]; it must be zero in the other modes.
	UniquePeriod time.Duration `json:"unique_period,omitempty"`
	// LimitKey names the job's share of its task's per-key limits
	// (TaskConfig.MaxRunningPerKey and MaxStartsPerSecondPerKey), a tenant
	// for example. It follows the name rules; empty means no key, and the
	// per-key limits do not apply.
	LimitKey string `json:"limit_key,omitempty"`
	// SequenceKey puts the job in a sequence: the jobs of one queue that
	// share it run one at a time, in job id order (spawn order), the next
	// starting only when the one before is terminal. It follows the name
	// rules; empty means no sequence.
	SequenceKey string `json:"sequence_key,omitempty"`
}

// Lease is a worker's claim on a running job. Token is the fencing token:
// it increases with every claim of the job, and a backend accepts a mutation
// only while the job is running under the same token.
type Lease struct {
	JobID     string    `json:"job_id"`
	WorkerID  string    `json:"worker_id"`
	Token     int64     `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Job is the stored record of one logical task.
type Job struct {
	ID          string             `json:"id"`
	Queue       string             `json:"queue"`
	Task        string             `json:"task"`
	Payload     []byte             `json:"payload,omitempty"`
	Headers     map[string]string  `json:"headers,omitempty"`
	Priority    int                `json:"priority"`
	State       JobState           `json:"state"`
	Attempt     int                `json:"attempt"`
	MaxAttempts int                `json:"max_attempts"`
	Retry       RetryPolicy        `json:"retry,omitempty"`
	Cancel      CancellationPolicy `json:"cancel,omitempty"`

	IdempotencyKey string `json:"idempotency_key,omitempty"`
	Fingerprint    string `json:"fingerprint"`
	Actor          string `json:"actor,omitempty"`

	// Unique, UniquePeriod, LimitKey and SequenceKey are the request's
	// flow fields (see [EnqueueRequest]).
	Unique       UniqueMode    `json:"unique,omitempty"`
	UniquePeriod time.Duration `json:"unique_period,omitempty"`
	LimitKey     string        `json:"limit_key,omitempty"`
	SequenceKey  string        `json:"sequence_key,omitempty"`

	// RunAt is when a queued or sleeping job becomes claimable.
	RunAt          time.Time `json:"run_at"`
	CreatedAt      time.Time `json:"created_at"`
	FirstStartedAt time.Time `json:"first_started_at,omitempty"`
	FinishedAt     time.Time `json:"finished_at,omitempty"`

	// Result is the output of a succeeded job.
	Result []byte `json:"result,omitempty"`
	// LastError is the error of the latest failed run, or why it was cancelled.
	LastError string `json:"last_error,omitempty"`

	// Lease is the current claim; its Token is kept after the claim ends, so
	// it also tells how many times the job was claimed.
	Lease Lease `json:"lease"`
}

// EnqueueResult is the outcome of one item of an Enqueue batch.
type EnqueueResult struct {
	// Job is the stored job: the new one, or the one the key already held.
	Job Job `json:"job"`
	// Reused is true when an idempotency key matched an existing job with the
	// same fingerprint, and nothing new was stored.
	Reused bool `json:"reused"`
}

// Run is one claim of a job, from claim to release.
type Run struct {
	ID    string `json:"id"`
	JobID string `json:"job_id"`
	// Queue and Task are the job's; [RunReader] sets them, and ListRuns
	// may leave them empty.
	Queue      string    `json:"queue,omitempty"`
	Task       string    `json:"task,omitempty"`
	Attempt    int       `json:"attempt"`
	WorkerID   string    `json:"worker_id"`
	Token      int64     `json:"token"`
	Status     RunStatus `json:"status"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// Duration is how long the run held its claim; zero while it still runs.
func (r Run) Duration() time.Duration {
	if r.FinishedAt.IsZero() {
		return 0
	}
	return r.FinishedAt.Sub(r.StartedAt)
}

// Checkpoint is the committed value of one named step of a job.
type Checkpoint struct {
	JobID     string    `json:"job_id"`
	Step      string    `json:"step"`
	Value     []byte    `json:"value"`
	CreatedAt time.Time `json:"created_at"`
}
