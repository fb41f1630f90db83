// Package faulty wraps a correct backend so that it breaks one rule of the
// contract on purpose. The conformance suite runs against each wrapper to
// show that it notices the fault.
package faulty

import (
	"context"
	"fmt"
	"sort"

	"github.com/boson-go/boson/core"
)

// Fault is one deliberate defect.
type Fault struct {
	// Name selects the fault.
	Name string
	// What describes the defect.
	What string
	// CaughtBy names suite cases (relative to the suite's root test) that
	// must fail against the fault.
	CaughtBy []string
	// TxControl: the wrapper implements core.TxController on transactions
	// from [BeginJournal], so the harness declares TxControl.
	TxControl bool
	wrap      func(b core.QueueBackend) core.QueueBackend
}

// Faults lists every fault, by name.
var Faults = map[string]Fault{}

func register(f Fault) { Faults[f.Name] = f }

// Names returns the fault names in order.
func Names() []string {
	names := make([]string, 0, len(Faults))
	for n := range Faults {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Wrap returns b with the named fault, or an error for an unknown name.
func Wrap(name string, b core.QueueBackend) (core.QueueBackend, error) {
	f, ok := Faults[name]
	if !ok {
		return nil, fmt.Errorf("faulty: unknown fault %q", name)
	}
	return f.wrap(b), nil
}

// base forwards everything to the wrapped backend, including
// notifications; each fault overrides what it breaks.
type base struct {
	core.QueueBackend
}

// Subscribe forwards to the wrapped backend's notifications.
func (b base) Subscribe(queue string) (<-chan struct{}, func()) {
	sig, stop, ok := core.SubscribeQueue(b.QueueBackend, queue)
	if !ok {
		return nil, func() {}
	}
	return sig, stop
}

// currentToken reads the token a job is running under, or 0.
func currentToken(ctx context.Context, b core.QueueBackend, l core.Lease) core.Lease {
	j, err := b.GetJob(ctx, l.JobID)
	if err == nil && j.Lease.Token > 0 {
		l.Token = j.Lease.Token
	}
	return l
}

// The operations capabilities forward to the wrapped backend, or report
// core.ErrUnsupported when it lacks them, so that a fault keeps the
// capabilities of the backend it wraps.

// GetRun forwards to the wrapped backend's core.RunReader.
func (b base) GetRun(ctx context.Context, runID string) (core.Run, error) {
	rr, ok := b.QueueBackend.(core.RunReader)
	if !ok {
		return core.Run{}, core.ErrUnsupported
	}
	return rr.GetRun(ctx, runID)
}

// ListAllRuns forwards to the wrapped backend's core.RunReader.
func (b base) ListAllRuns(ctx context.Context, f core.RunFilter) (core.RunPage, error) {
	rr, ok := b.QueueBackend.(core.RunReader)
	if !ok {
		return core.RunPage{}, core.ErrUnsupported
	}
	return rr.ListAllRuns(ctx, f)
}

// CountRuns forwards to the wrapped backend's core.RunReader.
func (b base) CountRuns(ctx context.Context, f core.RunFilter) (map[core.RunStatus]int64, error) {
	rr, ok := b.QueueBackend.(core.RunReader)
	if !ok {
		return nil, core.ErrUnsupported
	}
	return rr.CountRuns(ctx, f)
}

// BulkStep forwards to the wrapped backend's core.BulkActor, or runs the
// step on core.Bulk's per-job calls when it has none.
func (b base) BulkStep(ctx context.Context, req core.BulkRequest) (core.BulkResult, error) {
	if ba, ok := b.QueueBackend.(core.BulkActor); ok {
		return ba.BulkStep(ctx, req)
	}
	return core.Bulk(ctx, b.QueueBackend, req)
}

// SearchJobs forwards to the wrapped backend's core.JobSearcher.
func (b base) SearchJobs(ctx context.Context, s core.JobSearch) (core.JobPage, error) {
	js, ok := b.QueueBackend.(core.JobSearcher)
	if !ok {
		return core.JobPage{}, core.ErrUnsupported
	}
	return js.SearchJobs(ctx, s)
}

// CountSearch forwards to the wrapped backend's core.JobSearcher.
func (b base) CountSearch(ctx context.Context, s core.JobSearch) (map[core.JobState]int64, error) {
	js, ok := b.QueueBackend.(core.JobSearcher)
	if !ok {
		return nil, core.ErrUnsupported
	}
	return js.CountSearch(ctx, s)
}

// FindByIdempotencyKey forwards to the wrapped backend's core.JobSearcher.
func (b base) FindByIdempotencyKey(ctx context.Context, queue, key string) (core.Job, error) {
	js, ok := b.QueueBackend.(core.JobSearcher)
	if !ok {
		return core.Job{}, core.ErrUnsupported
	}
	return js.FindByIdempotencyKey(ctx, queue, key)
}

// ListTasks forwards to the wrapped backend's core.TaskLister.
func (b base) ListTasks(ctx context.Context) ([]core.TaskInfo, error) {
	tl, ok := b.QueueBackend.(core.TaskLister)
	if !ok {
		return nil, core.ErrUnsupported
	}
	return tl.ListTasks(ctx)
}

// DeleteJob forwards to the wrapped backend's core.JobDeleter.
func (b base) DeleteJob(ctx context.Context, jobID string, force bool) error {
	jd, ok := b.QueueBackend.(core.JobDeleter)
	if !ok {
		return core.ErrUnsupported
	}
	return jd.DeleteJob(ctx, jobID, force)
}

// DeleteQueue forwards to the wrapped backend's core.JobDeleter.
func (b base) DeleteQueue(ctx context.Context, req core.DeleteQueueRequest) (core.DeleteQueueResult, error) {
	jd, ok := b.QueueBackend.(core.JobDeleter)
	if !ok {
		return core.DeleteQueueResult{}, core.ErrUnsupported
	}
	return jd.DeleteQueue(ctx, req)
}

// RunningByKey forwards to the wrapped backend's core.FlowController.
func (b base) RunningByKey(ctx context.Context, task string, limit int) ([]core.KeyCount, error) {
	fc, ok := b.QueueBackend.(core.FlowController)
	if !ok {
		return nil, core.ErrUnsupported
	}
	return fc.RunningByKey(ctx, task, limit)
}

// CreateQueue forwards to the wrapped backend's core.QueueDeclarer.
func (b base) CreateQueue(ctx context.Context, cfg core.QueueConfig) (core.QueueConfig, bool, error) {
	qd, ok := b.QueueBackend.(core.QueueDeclarer)
	if !ok {
		return core.QueueConfig{}, false, core.ErrUnsupported
	}
	return qd.CreateQueue(ctx, cfg)
}

// QueueDeclared forwards to the wrapped backend's core.QueueDeclarer.
func (b base) QueueDeclared(ctx context.Context, queue string) (bool, error) {
	qd, ok := b.QueueBackend.(core.QueueDeclarer)
	if !ok {
		return false, core.ErrUnsupported
	}
	return qd.QueueDeclared(ctx, queue)
}

// AwaitJobs forwards to the wrapped backend's core.Awaiter.
func (b base) AwaitJobs(ctx context.Context, req core.AwaitRequest) (core.AwaitResult, error) {
	a, ok := b.QueueBackend.(core.Awaiter)
	if !ok {
		return core.AwaitResult{}, core.ErrUnsupported
	}
	return a.AwaitJobs(ctx, req)
}

// JobWait forwards to the wrapped backend's core.Awaiter.
func (b base) JobWait(ctx context.Context, jobID string) (core.Wait, error) {
	a, ok := b.QueueBackend.(core.Awaiter)
	if !ok {
		return core.Wait{}, core.ErrUnsupported
	}
	return a.JobWait(ctx, jobID)
}
