package boson

import (
	"sync/atomic"
	"time"
)

// Counters are a worker's process-local counts since it started. They are
// exporter-agnostic (read them into Prometheus, OpenTelemetry or logs) and
// are not a durable ledger: the backend is the source of truth.
type Counters struct {
	// Claimed counts jobs the worker claimed.
	Claimed int64
	// ClaimErrors counts claim calls that failed.
	ClaimErrors int64
	// Executions counts attempts handed to a handler or executor.
	Executions int64
	// Completed counts attempts that completed their job.
	Completed int64
	// Failed counts attempts that ended with an error (retried or final).
	Failed int64
	// LeaseLost counts attempts whose lease was superseded (rescued or
	// fenced out) while they ran.
	LeaseLost int64
	// Cancelled counts attempts whose job was cancelled (explicitly or by a
	// deadline) while they ran.
	Cancelled int64
	// Suspended counts attempts that released their claim with a durable
	// sleep or a snooze.
	Suspended int64
	// Unhandled counts claimed jobs whose task had no handler.
	Unhandled int64
	// ExecutionTime sums the wall-clock duration of executions.
	ExecutionTime time.Duration
}

// MetricsSnapshot is a consistent-enough copy of a worker's counters: the
// total and one entry per served queue.
type MetricsSnapshot struct {
	WorkerID string
	Total    Counters
	Queues   map[string]Counters
}

type counterSet struct {
	claimed, claimErrors, executions, completed, failed, leaseLost, cancelled, suspended, unhandled atomic.Int64
	execNanos                                                                                       atomic.Int64
}

func (c *counterSet) snapshot() Counters {
	return Counters{
		Claimed:       c.claimed.Load(),
		ClaimErrors:   c.claimErrors.Load(),
		Executions:    c.executions.Load(),
		Completed:     c.completed.Load(),
		Failed:        c.failed.Load(),
		LeaseLost:     c.leaseLost.Load(),
		Cancelled:     c.cancelled.Load(),
		Suspended:     c.suspended.Load(),
		Unhandled:     c.unhandled.Load(),
		ExecutionTime: time.Duration(c.execNanos.Load()),
	}
}

func (t *Counters) add(c Counters) {
	t.Claimed += c.Claimed
	t.ClaimErrors += c.ClaimErrors
	t.Executions += c.Executions
	t.Completed += c.Completed
	t.Failed += c.Failed
	t.LeaseLost += c.LeaseLost
	t.Cancelled += c.Cancelled
	t.Suspended += c.Suspended
	t.Unhandled += c.Unhandled
	t.ExecutionTime += c.ExecutionTime
}

// Metrics returns a snapshot of the worker's counters.
func (w *Worker) Metrics() MetricsSnapshot {
	s := MetricsSnapshot{WorkerID: w.opts.ID, Queues: make(map[string]Counters, len(w.counters))}
	for q, c := range w.counters {
		qc := c.snapshot()
		s.Queues[q] = qc
		s.Total.add(qc)
	}
	return s
}
