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
	// ExecutionHistogram counts executions by duration: element i counts
	// those that took more than ExecutionBuckets[i-1] and at most
	// ExecutionBuckets[i]; the last element counts those above every bound.
	ExecutionHistogram [len(ExecutionBuckets) + 1]int64
}

// ExecutionBuckets are the upper bounds of [Counters.ExecutionHistogram],
// chosen to suit exporters such as Prometheus histograms.
var ExecutionBuckets = [...]time.Duration{
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second,
	2500 * time.Millisecond, 5 * time.Second, 10 * time.Second, 30 * time.Second,
	time.Minute, 5 * time.Minute,
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
	hist                                                                                            [len(ExecutionBuckets) + 1]atomic.Int64
}

// observe records one execution's duration.
func (c *counterSet) observe(d time.Duration) {
	c.execNanos.Add(int64(d))
	i := 0
	for i < len(ExecutionBuckets) && d > ExecutionBuckets[i] {
		i++
	}
	c.hist[i].Add(1)
}

func (c *counterSet) snapshot() Counters {
	out := Counters{
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
	for i := range c.hist {
		out.ExecutionHistogram[i] = c.hist[i].Load()
	}
	return out
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
	for i, n := range c.ExecutionHistogram {
		t.ExecutionHistogram[i] += n
	}
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
