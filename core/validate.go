package core

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"slices"
	"time"
	"unicode/utf8"
)

// MaxIdempotencyKeyLength is the longest idempotency key accepted.
const MaxIdempotencyKeyLength = 256

// MaxErrorLength is the longest error or reason text a backend stores; longer
// text is truncated by [TruncateError].
const MaxErrorLength = 16 << 10

// ValidateRequest checks one enqueue request against the limits without
// changing it. Errors wrap [ErrInvalidArgument].
func ValidateRequest(r EnqueueRequest, l Limits) error {
	l = l.WithDefaults()
	if r.Queue != "" {
		if err := ValidateName("queue", r.Queue); err != nil {
			return err
		}
	}
	if err := ValidateName("task", r.Task); err != nil {
		return err
	}
	if err := l.ValidatePayload("payload", r.Payload); err != nil {
		return err
	}
	size := 0
	for k, v := range r.Headers {
		if k == "" {
			return invalid("headers", "a key is empty")
		}
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return invalid("headers", "key %q or its value is not valid UTF-8", k)
		}
		size += len(k) + len(v)
	}
	if size > l.MaxHeaderBytes {
		return invalid("headers", "are %d bytes, the limit is %d", size, l.MaxHeaderBytes)
	}
	if err := ValidatePriority("priority", r.Priority); err != nil {
		return err
	}
	if r.MaxAttempts < 0 {
		return invalid("max_attempts", "%d must be at least 1 (0 means the default %d)", r.MaxAttempts, DefaultMaxAttempts)
	}
	if err := ValidateRetryPolicy(r.Retry); err != nil {
		return err
	}
	if err := ValidateCancellationPolicy(r.Cancel); err != nil {
		return err
	}
	if len(r.IdempotencyKey) > MaxIdempotencyKeyLength {
		return invalid("idempotency_key", "is %d bytes, the limit is %d", len(r.IdempotencyKey), MaxIdempotencyKeyLength)
	}
	if !utf8.ValidString(r.IdempotencyKey) {
		return invalid("idempotency_key", "is not valid UTF-8")
	}
	if len(r.Fingerprint) > 128 || !utf8.ValidString(r.Fingerprint) {
		return invalid("fingerprint", "must be valid UTF-8 of at most 128 bytes")
	}
	if len(r.Actor) > MaxNameLength*2 || !utf8.ValidString(r.Actor) {
		return invalid("actor", "must be valid UTF-8 of at most %d bytes", MaxNameLength*2)
	}
	if !r.RunAt.IsZero() && (r.RunAt.Year() < 1970 || r.RunAt.Year() > 9999) {
		return invalid("run_at", "%v is outside the years 1970 to 9999", r.RunAt)
	}
	return validateFlowRequest(r)
}

// ValidateDuration checks that d is not negative.
func ValidateDuration(field string, d time.Duration) error {
	if d < 0 {
		return invalid(field, "%v must not be negative", d)
	}
	return nil
}

// ValidateRetryPolicy checks durations (not negative), Factor (0, or at
// least 1, and finite) and Jitter (in [0, 1], or [NoJitter]).
func ValidateRetryPolicy(p RetryPolicy) error {
	if err := ValidateDuration("retry.initial", p.Initial); err != nil {
		return err
	}
	if err := ValidateDuration("retry.max", p.Max); err != nil {
		return err
	}
	if math.IsNaN(p.Factor) || math.IsInf(p.Factor, 0) || p.Factor != 0 && p.Factor < 1 {
		return invalid("retry.factor", "%v must be 0 (default) or a finite number of at least 1", p.Factor)
	}
	if p.Jitter != NoJitter && (math.IsNaN(p.Jitter) || p.Jitter < 0 || p.Jitter > 1) {
		return invalid("retry.jitter", "%v must lie in [0, 1] (0: the default), or be -1 (core.NoJitter: none)", p.Jitter)
	}
	return nil
}

// ValidateCancellationPolicy checks that both deadlines are not negative.
func ValidateCancellationPolicy(p CancellationPolicy) error {
	if err := ValidateDuration("cancel.max_delay", p.MaxDelay); err != nil {
		return err
	}
	return ValidateDuration("cancel.max_duration", p.MaxDuration)
}

// ValidateTaskConfig checks a task config before it is stored.
func ValidateTaskConfig(c TaskConfig) error {
	if err := ValidateName("task", c.Task); err != nil {
		return err
	}
	if c.MaxInFlight < 0 {
		return invalid("max_in_flight", "%d must not be negative", c.MaxInFlight)
	}
	if c.MaxEnqueuePerSecond < 0 {
		return invalid("max_enqueue_per_second", "%d must not be negative", c.MaxEnqueuePerSecond)
	}
	if c.Queue != "" {
		if err := ValidateName("queue", c.Queue); err != nil {
			return err
		}
	}
	if err := ValidatePriority("priority", c.Priority); err != nil {
		return err
	}
	if c.MaxAttempts < 0 {
		return invalid("max_attempts", "%d must not be negative", c.MaxAttempts)
	}
	if err := validateFlowConfig(c); err != nil {
		return err
	}
	return ValidateRetryPolicy(c.Retry)
}

// ValidateQueueConfig checks a queue config before it is stored.
func ValidateQueueConfig(c QueueConfig) error {
	if err := ValidateName("queue", c.Queue); err != nil {
		return err
	}
	if err := ValidateDuration("retention_ttl", c.RetentionTTL); err != nil {
		return err
	}
	if c.CleanupLimit < 0 {
		return invalid("cleanup_limit", "%d must not be negative", c.CleanupLimit)
	}
	return validateFlowLimit("max_running", c.MaxRunning)
}

// ValidateClaim checks a claim request.
func ValidateClaim(r ClaimRequest, l Limits) error {
	if err := ValidateName("queue", r.Queue); err != nil {
		return err
	}
	if err := ValidateName("worker_id", r.WorkerID); err != nil {
		return err
	}
	if err := l.ValidateBatch("limit", r.Limit); err != nil {
		return err
	}
	if r.LeaseTTL <= 0 {
		return invalid("lease_ttl", "%v must be positive", r.LeaseTTL)
	}
	return nil
}

// ValidateLease checks the shape of a lease handed to a fenced method. A
// lease that is well formed but stale is not an error here: the backend
// reports it as [ErrLeaseLost].
func ValidateLease(l Lease) error {
	if l.JobID == "" || len(l.JobID) > MaxNameLength {
		return invalid("lease.job_id", "must be 1 to %d bytes", MaxNameLength)
	}
	if l.Token <= 0 {
		return invalid("lease.token", "%d must be positive", l.Token)
	}
	return nil
}

// ValidateJobFilter checks a listing filter.
func ValidateJobFilter(f JobFilter) error {
	if f.Queue != "" {
		if err := ValidateName("queue", f.Queue); err != nil {
			return err
		}
	}
	if f.Task != "" {
		if err := ValidateName("task", f.Task); err != nil {
			return err
		}
	}
	for _, s := range f.States {
		if !s.Valid() {
			return invalid("states", "unknown state %q", s)
		}
	}
	if f.Limit < 0 || f.Limit > MaxPageSize {
		return invalid("limit", "%d is outside [0, %d]", f.Limit, MaxPageSize)
	}
	if len(f.Cursor) > MaxNameLength {
		return invalid("cursor", "is too long")
	}
	return nil
}

// PageSize returns the page size a filter asks for: DefaultPageSize when 0.
func (f JobFilter) PageSize() int {
	if f.Limit == 0 {
		return DefaultPageSize
	}
	return f.Limit
}

// ValidateCleanup checks a cleanup request.
func ValidateCleanup(r CleanupRequest, l Limits) error {
	if r.Queue != "" {
		if err := ValidateName("queue", r.Queue); err != nil {
			return err
		}
	}
	if r.FinishedBefore.IsZero() {
		return invalid("finished_before", "must be set")
	}
	return l.ValidateBatch("limit", r.Limit)
}

// TruncateError shortens s to at most [MaxErrorLength] bytes on a UTF-8
// boundary and replaces invalid UTF-8, so that any store can keep it.
func TruncateError(s string) string {
	if !utf8.ValidString(s) {
		s = string([]rune(s)) // replaces invalid bytes with U+FFFD
	}
	if len(s) <= MaxErrorLength {
		return s
	}
	cut := MaxErrorLength
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// DefaultCancelReason is the LastError of a job cancelled without a reason.
const DefaultCancelReason = "cancelled"

// CancelReason is the LastError a cancellation records: reason, or
// [DefaultCancelReason] when it is empty, shortened as [TruncateError] does.
// Every store records a cancellation's reason through it, so that a job
// cancelled one at a time and one cancelled in bulk read the same.
func CancelReason(reason string) string {
	if reason == "" {
		reason = DefaultCancelReason
	}
	return TruncateError(reason)
}

// Fingerprint returns the idempotency fingerprint of a request: a hash of
// its task, payload, headers, retry policy, attempt budget, cancellation
// policy and flow fields (unique mode and period, limit and sequence
// keys; a request that sets none hashes as it did before they existed).
// Queue, priority, run-at and actor do not take part. The defaults
// are applied first, so an omitted MaxAttempts and an explicit default match.
func Fingerprint(r EnqueueRequest) string {
	// The hashed bytes are laid out in one buffer (on the stack for a
	// small request) and hashed at once: no allocation but the result.
	var stack [512]byte
	b := stack[:0]
	putInt := func(b []byte, v int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(v)) }
	putStr := func(b []byte, s string) []byte { return append(putInt(b, int64(len(s))), s...) }

	b = putStr(b, r.Task)
	b = putInt(b, int64(len(r.Payload)))
	b = append(b, r.Payload...)
	b = putInt(b, int64(len(r.Headers)))
	if len(r.Headers) > 0 {
		keys := make([]string, 0, len(r.Headers))
		for k := range r.Headers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b = putStr(b, k)
			b = putStr(b, r.Headers[k])
		}
	}
	attempts := r.MaxAttempts
	if attempts == 0 {
		attempts = DefaultMaxAttempts
	}
	b = putInt(b, int64(attempts))
	b = putInt(b, int64(r.Retry.Initial))
	b = putInt(b, int64(math.Float64bits(r.Retry.Factor)))
	b = putInt(b, int64(r.Retry.Max))
	b = putInt(b, int64(math.Float64bits(r.Retry.Jitter)))
	b = putInt(b, int64(r.Cancel.MaxDelay))
	b = putInt(b, int64(r.Cancel.MaxDuration))
	if r.UsesFlowControl() || r.UniquePeriod != 0 {
		b = putStr(b, string(r.Unique))
		b = putInt(b, int64(r.UniquePeriod))
		b = putStr(b, r.LimitKey)
		b = putStr(b, r.SequenceKey)
	}

	sum := sha256.Sum256(b)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

// RequestJob returns the job that a valid request r stands for, before it
// is stored: defaults applied (queue, attempt budget), state queued, and the
// request's own fields, sharing r's payload and headers. It sets no id, no
// times and no fingerprint beyond r's own: [PrepareJobs] adds them, and a
// backend that stamps ids and times itself (under its own lock, say)
// starts from here.
func RequestJob(r *EnqueueRequest) Job {
	j := Job{
		Queue:          r.Queue,
		Task:           r.Task,
		Payload:        r.Payload,
		Headers:        r.Headers,
		Priority:       r.Priority,
		State:          StateQueued,
		MaxAttempts:    r.MaxAttempts,
		Retry:          r.Retry,
		Cancel:         r.Cancel,
		IdempotencyKey: r.IdempotencyKey,
		Fingerprint:    r.Fingerprint,
		Actor:          r.Actor,
		Unique:         r.Unique,
		UniquePeriod:   r.UniquePeriod,
		LimitKey:       r.LimitKey,
		SequenceKey:    r.SequenceKey,
	}
	if j.Queue == "" {
		j.Queue = DefaultQueue
	}
	if j.MaxAttempts == 0 {
		j.MaxAttempts = DefaultMaxAttempts
	}
	return j
}

// PrepareJobs validates a batch of enqueue requests and turns them into the
// jobs to store, with defaults applied, fresh time-ordered ids, state
// queued, CreatedAt now and RunAt now (or the requested time), and the
// fingerprint computed where the request left it empty. All times are
// truncated to microseconds. An invalid item gives a [*BatchError]
// wrapping [ErrInvalidArgument]; an empty or oversized batch an error
// wrapping [ErrInvalidArgument].
func PrepareJobs(reqs []EnqueueRequest, now time.Time, l Limits) ([]Job, error) {
	if err := l.ValidateBatch("batch size", len(reqs)); err != nil {
		return nil, err
	}
	now = now.UTC().Truncate(time.Microsecond)
	jobs := make([]Job, len(reqs))
	for i, r := range reqs {
		if err := ValidateRequest(r, l); err != nil {
			return nil, &BatchError{Index: i, Err: err}
		}
		j := RequestJob(&r)
		j.ID = NewID(now)
		j.RunAt, j.CreatedAt = now, now
		if j.Fingerprint == "" {
			j.Fingerprint = Fingerprint(r)
		}
		if !r.RunAt.IsZero() && r.RunAt.After(now) {
			j.RunAt = r.RunAt.UTC().Truncate(time.Microsecond)
		}
		jobs[i] = j
	}
	return jobs, nil
}

// DeadlinePassed reports whether job j has passed a cancellation deadline at
// now, and which: MaxDelay applies only before the first start, MaxDuration
// only after it.
func DeadlinePassed(j Job, now time.Time) (reason string, passed bool) {
	if j.FirstStartedAt.IsZero() {
		if j.Cancel.MaxDelay > 0 && !now.Before(j.CreatedAt.Add(j.Cancel.MaxDelay)) {
			return "deadline exceeded: max delay before first start", true
		}
		return "", false
	}
	if j.Cancel.MaxDuration > 0 && !now.Before(j.FirstStartedAt.Add(j.Cancel.MaxDuration)) {
		return "deadline exceeded: max duration from first start", true
	}
	return "", false
}

// Deadline returns the instant at which j passes a cancellation deadline,
// and false when no deadline applies in its current phase.
func Deadline(j Job) (time.Time, bool) {
	if j.FirstStartedAt.IsZero() {
		if j.Cancel.MaxDelay > 0 {
			return j.CreatedAt.Add(j.Cancel.MaxDelay), true
		}
		return time.Time{}, false
	}
	if j.Cancel.MaxDuration > 0 {
		return j.FirstStartedAt.Add(j.Cancel.MaxDuration), true
	}
	return time.Time{}, false
}
