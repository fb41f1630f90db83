// Package counting is a minimal third-party backend adapter: it wraps any
// core.QueueBackend, counts the calls and jobs that pass through its
// state-changing methods, logs them, and forwards everything else. It
// passes the conformance suite (see counting_test.go), which is what makes
// an adapter trustworthy: any wrapper, proxy or new store is held to the
// same contract as the bundled backends.
package counting

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
)

// Backend counts and logs the traffic to the backend it wraps. Methods it
// does not define (the reads, configs, Close) are the inner backend's,
// through embedding. It is safe for concurrent use.
type Backend struct {
	core.QueueBackend
	logger *slog.Logger

	mu    sync.Mutex
	calls map[string]int64
	jobs  map[string]int64
}

// New wraps inner. A nil logger means slog.Default(); records are logged at
// debug level.
func New(inner core.QueueBackend, logger *slog.Logger) *Backend {
	if logger == nil {
		logger = slog.Default()
	}
	return &Backend{QueueBackend: inner, logger: logger, calls: map[string]int64{}, jobs: map[string]int64{}}
}

// Counts is a copy of the counters: calls per method, and jobs (enqueued,
// claimed, completed, failed) that went through them.
type Counts struct {
	Calls map[string]int64
	Jobs  map[string]int64
}

// Counts returns a copy of the counters.
func (b *Backend) Counts() Counts {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := Counts{Calls: make(map[string]int64, len(b.calls)), Jobs: make(map[string]int64, len(b.jobs))}
	for k, v := range b.calls {
		c.Calls[k] = v
	}
	for k, v := range b.jobs {
		c.Jobs[k] = v
	}
	return c
}

// Methods returns the names of the counted methods that were called,
// sorted.
func (c Counts) Methods() []string {
	names := make([]string, 0, len(c.Calls))
	for k := range c.Calls {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// record counts one call of method that moved n jobs under label.
func (b *Backend) record(ctx context.Context, method, label string, n int, start time.Time, err error) {
	b.mu.Lock()
	b.calls[method]++
	if label != "" && n > 0 {
		b.jobs[label] += int64(n)
	}
	b.mu.Unlock()
	b.logger.DebugContext(ctx, "boson call", "method", method, "jobs", n, "took", time.Since(start), "err", err)
}

// Enqueue implements core.QueueBackend.
func (b *Backend) Enqueue(ctx context.Context, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	start := time.Now()
	res, err := b.QueueBackend.Enqueue(ctx, reqs)
	b.record(ctx, "Enqueue", "enqueued", len(res), start, err)
	return res, err
}

// Claim implements core.QueueBackend.
func (b *Backend) Claim(ctx context.Context, req core.ClaimRequest) ([]core.Job, error) {
	start := time.Now()
	jobs, err := b.QueueBackend.Claim(ctx, req)
	b.record(ctx, "Claim", "claimed", len(jobs), start, err)
	return jobs, err
}

// Heartbeat implements core.QueueBackend.
func (b *Backend) Heartbeat(ctx context.Context, lease core.Lease, ttl time.Duration) (core.Lease, error) {
	start := time.Now()
	l, err := b.QueueBackend.Heartbeat(ctx, lease, ttl)
	b.record(ctx, "Heartbeat", "", 0, start, err)
	return l, err
}

// Complete implements core.QueueBackend.
func (b *Backend) Complete(ctx context.Context, items []core.Completion) ([]error, error) {
	start := time.Now()
	errs, err := b.QueueBackend.Complete(ctx, items)
	done := 0
	if err == nil {
		for i := range items {
			if i < len(errs) && errs[i] == nil {
				done++
			}
		}
	}
	b.record(ctx, "Complete", "completed", done, start, err)
	return errs, err
}

// Fail implements core.QueueBackend.
func (b *Backend) Fail(ctx context.Context, f core.Failure) (core.JobState, error) {
	start := time.Now()
	st, err := b.QueueBackend.Fail(ctx, f)
	n := 0
	if err == nil {
		n = 1
	}
	b.record(ctx, "Fail", "failed", n, start, err)
	return st, err
}

// Sleep implements core.QueueBackend.
func (b *Backend) Sleep(ctx context.Context, lease core.Lease, until time.Time) error {
	start := time.Now()
	err := b.QueueBackend.Sleep(ctx, lease, until)
	b.record(ctx, "Sleep", "", 0, start, err)
	return err
}

// SaveCheckpoint implements core.QueueBackend.
func (b *Backend) SaveCheckpoint(ctx context.Context, lease core.Lease, step string, value []byte) ([]byte, error) {
	start := time.Now()
	v, err := b.QueueBackend.SaveCheckpoint(ctx, lease, step, value)
	b.record(ctx, "SaveCheckpoint", "", 0, start, err)
	return v, err
}

// Rescue implements core.QueueBackend.
func (b *Backend) Rescue(ctx context.Context, req core.RescueRequest) (core.RescueResult, error) {
	start := time.Now()
	r, err := b.QueueBackend.Rescue(ctx, req)
	b.record(ctx, "Rescue", "", 0, start, err)
	return r, err
}

// Cancel implements core.QueueBackend.
func (b *Backend) Cancel(ctx context.Context, jobID, reason string) (core.Job, error) {
	start := time.Now()
	j, err := b.QueueBackend.Cancel(ctx, jobID, reason)
	b.record(ctx, "Cancel", "", 0, start, err)
	return j, err
}

// Retry implements core.QueueBackend.
func (b *Backend) Retry(ctx context.Context, jobID string) (core.Job, error) {
	start := time.Now()
	j, err := b.QueueBackend.Retry(ctx, jobID)
	b.record(ctx, "Retry", "", 0, start, err)
	return j, err
}

// Cleanup implements core.QueueBackend.
func (b *Backend) Cleanup(ctx context.Context, req core.CleanupRequest) (int, error) {
	start := time.Now()
	n, err := b.QueueBackend.Cleanup(ctx, req)
	b.record(ctx, "Cleanup", "", 0, start, err)
	return n, err
}

// Subscribe implements core.Notifier by forwarding to the inner backend.
// When the inner backend does not notify, the channel never signals and
// workers fall back to polling, which the contract allows.
func (b *Backend) Subscribe(queue string) (<-chan struct{}, func()) {
	signal, stop, ok := core.SubscribeQueue(b.QueueBackend, queue)
	if !ok {
		return make(chan struct{}), func() {}
	}
	return signal, stop
}

// EnqueueTx implements core.TxEnqueuer by forwarding to the inner backend;
// it returns an error wrapping core.ErrUnsupported when that backend has no
// transactional enqueue.
func (b *Backend) EnqueueTx(ctx context.Context, tx any, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	start := time.Now()
	res, err := core.EnqueueTx(ctx, b.QueueBackend, tx, reqs)
	b.record(ctx, "EnqueueTx", "enqueued", len(res), start, err)
	return res, err
}

// Interface checks.
var (
	_ core.QueueBackend = (*Backend)(nil)
	_ core.Notifier     = (*Backend)(nil)
	_ core.TxEnqueuer   = (*Backend)(nil)
)
