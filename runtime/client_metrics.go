package boson

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/core"
)

// QueueTask names the queue and task that a client's counters are kept
// for.
type QueueTask struct {
	Queue string
	Task  string
}

// ClientCounters are a client's process-local counts of the spawns of one
// queue and task since the client was made. Like the worker's [Counters]
// they are exporter-agnostic and not a durable ledger. Every spawned
// request that reached the backend is counted exactly once, in Spawned,
// Reused, Conflicts, RateLimited or Errors; a request refused before it
// reached the backend (invalid input, an actor policy) is not counted.
type ClientCounters struct {
	// Spawned counts jobs the backend stored.
	Spawned int64
	// Reused counts spawns answered with an existing job through their
	// idempotency key.
	Reused int64
	// Conflicts counts requests refused because their idempotency key
	// holds a different request ([core.ErrIdempotencyConflict]).
	Conflicts int64
	// RateLimited counts requests refused by a task's enqueue limits
	// ([core.ErrRateLimited]).
	RateLimited int64
	// Errors counts requests that failed otherwise, including the requests
	// of a batch that the backend refused as a whole without naming one.
	// The other requests of a batch refused because of one named request
	// are not counted anywhere: nothing went wrong with them.
	Errors int64
	// SpawnTime sums the latency of the backend calls that carried this
	// queue and task's requests; a batch call counts once per queue and
	// task it carried.
	SpawnTime time.Duration
	// SpawnHistogram counts those calls by latency: element i counts the
	// calls that took more than SpawnBuckets[i-1] and at most
	// SpawnBuckets[i]; the last element counts those above every bound.
	SpawnHistogram [len(SpawnBuckets) + 1]int64
}

// SpawnBuckets are the upper bounds of [ClientCounters.SpawnHistogram].
var SpawnBuckets = [...]time.Duration{
	250 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, 2500 * time.Microsecond,
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second,
	2500 * time.Millisecond, 5 * time.Second,
}

// ClientMetricsSnapshot is a copy of a client's counters: one entry per
// queue and task it has sent spawns for, and their sum.
type ClientMetricsSnapshot struct {
	Total ClientCounters
	Tasks map[QueueTask]ClientCounters
}

// Metrics returns a snapshot of the client's spawn counters.
func (c *Client) Metrics() ClientMetricsSnapshot {
	s := ClientMetricsSnapshot{Tasks: map[QueueTask]ClientCounters{}}
	c.metrics.sets.Range(func(k, v any) bool {
		cc := v.(*clientCounterSet).snapshot()
		s.Tasks[k.(QueueTask)] = cc
		s.Total.Add(cc)
		return true
	})
	return s
}

// clientMetrics holds a client's counters by queue and task.
type clientMetrics struct {
	sets sync.Map // QueueTask -> *clientCounterSet
}

type clientCounterSet struct {
	spawned, reused, conflicts, rateLimited, errors atomic.Int64
	nanos                                           atomic.Int64
	hist                                            [len(SpawnBuckets) + 1]atomic.Int64
}

func (m *clientMetrics) set(k QueueTask) *clientCounterSet {
	if v, ok := m.sets.Load(k); ok {
		return v.(*clientCounterSet)
	}
	v, _ := m.sets.LoadOrStore(k, &clientCounterSet{})
	return v.(*clientCounterSet)
}

// enqueue sends a built batch to b (in tx when it is not nil) and counts
// the outcome of each request.
func (c *Client) enqueue(ctx context.Context, b core.QueueBackend, tx any, ers []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	start := time.Now()
	var (
		res []core.EnqueueResult
		err error
	)
	if tx != nil {
		res, err = core.EnqueueTx(ctx, b, tx, ers)
	} else {
		res, err = b.Enqueue(ctx, ers)
	}
	c.metrics.record(ers, res, err, time.Since(start))
	return res, err
}

// record counts one backend call's outcome.
func (m *clientMetrics) record(ers []core.EnqueueRequest, res []core.EnqueueResult, err error, took time.Duration) {
	var (
		lastKey QueueTask
		last    *clientCounterSet
		timed   map[*clientCounterSet]bool // the sets observed, past the first
		first   *clientCounterSet
	)
	setOf := func(i int) *clientCounterSet {
		k := QueueTask{Queue: ers[i].Queue, Task: ers[i].Task}
		if last == nil || k != lastKey {
			last, lastKey = m.set(k), k
		}
		switch {
		case first == nil:
			first = last
			last.observe(took)
		case last != first && !timed[last]:
			if timed == nil {
				timed = map[*clientCounterSet]bool{}
			}
			timed[last] = true
			last.observe(took)
		}
		return last
	}
	if err == nil {
		for i := range ers {
			s := setOf(i)
			if i < len(res) && res[i].Reused {
				s.reused.Add(1)
			} else {
				s.spawned.Add(1)
			}
		}
		return
	}
	var be *core.BatchError
	if errors.As(err, &be) && be.Index >= 0 && be.Index < len(ers) {
		for i := range ers {
			s := setOf(i)
			if i == be.Index {
				s.refused(be.Err)
			}
		}
		return
	}
	for i := range ers {
		setOf(i).refused(err)
	}
}

// refused counts one request the backend refused with err.
func (s *clientCounterSet) refused(err error) {
	switch {
	case errors.Is(err, core.ErrIdempotencyConflict):
		s.conflicts.Add(1)
	case errors.Is(err, core.ErrRateLimited):
		s.rateLimited.Add(1)
	default:
		s.errors.Add(1)
	}
}

func (s *clientCounterSet) observe(d time.Duration) {
	s.nanos.Add(int64(d))
	i := 0
	for i < len(SpawnBuckets) && d > SpawnBuckets[i] {
		i++
	}
	s.hist[i].Add(1)
}

func (s *clientCounterSet) snapshot() ClientCounters {
	out := ClientCounters{
		Spawned:     s.spawned.Load(),
		Reused:      s.reused.Load(),
		Conflicts:   s.conflicts.Load(),
		RateLimited: s.rateLimited.Load(),
		Errors:      s.errors.Load(),
		SpawnTime:   time.Duration(s.nanos.Load()),
	}
	for i := range s.hist {
		out.SpawnHistogram[i] = s.hist[i].Load()
	}
	return out
}

// Add adds c's counts to t, for summing the counters of several clients
// or queues.
func (t *ClientCounters) Add(c ClientCounters) {
	t.Spawned += c.Spawned
	t.Reused += c.Reused
	t.Conflicts += c.Conflicts
	t.RateLimited += c.RateLimited
	t.Errors += c.Errors
	t.SpawnTime += c.SpawnTime
	for i, n := range c.SpawnHistogram {
		t.SpawnHistogram[i] += n
	}
}
