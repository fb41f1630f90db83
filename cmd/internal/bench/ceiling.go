package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/core"
)

// runCeiling measures the store without the runtime: a batched enqueue of
// cfg.Jobs jobs, then cfg.CeilingLoops loops that claim cfg.CeilingBatch jobs
// and complete them in one call until every job is done, then single-job
// enqueue-claim-complete round trips.
func (e *env) runCeiling(ctx context.Context) (Result, error) {
	const name = "ceiling"
	n := e.cfg.Jobs
	queue := e.queueName(name)
	u0 := readUsage()
	enqTime, err := e.enqueueRaw(ctx, name+" enqueue", queue, "bench-raw", n, e.cfg.SpawnBatch)
	if err != nil {
		return Result{}, err
	}
	var done atomic.Int64
	seen := newTracker(n, 0)
	stop := e.prog.track(name+" claim+complete", int64(n), done.Load)
	errc := make(chan error, e.cfg.CeilingLoops)
	start := time.Now()
	for i := range e.cfg.CeilingLoops {
		go func() {
			worker := fmt.Sprintf("ceiling-%d", i)
			items := make([]core.Completion, 0, e.cfg.CeilingBatch)
			idle := time.Now()
			for done.Load() < int64(n) {
				jobs, err := e.raw.Claim(ctx, core.ClaimRequest{Queue: queue, WorkerID: worker, Limit: e.cfg.CeilingBatch, LeaseTTL: 10 * time.Minute})
				if err != nil {
					errc <- fmt.Errorf("claim: %w", err)
					return
				}
				if len(jobs) == 0 {
					if time.Since(idle) > e.cfg.StallTimeout {
						errc <- fmt.Errorf("raw claim found nothing for %v with %d of %d done", e.cfg.StallTimeout, done.Load(), n)
						return
					}
					time.Sleep(time.Millisecond)
					continue
				}
				idle = time.Now()
				items = items[:0]
				for _, j := range jobs {
					items = append(items, core.Completion{Lease: j.Lease})
				}
				errs, err := e.raw.Complete(ctx, items)
				if err != nil {
					errc <- fmt.Errorf("complete: %w", err)
					return
				}
				for k, it := range items {
					if k < len(errs) && errs[k] != nil {
						errc <- fmt.Errorf("complete %s: %w", it.Lease.JobID, errs[k])
						return
					}
					seen.finished(it.Lease.JobID, time.Time{})
				}
				done.Add(int64(len(items)))
			}
			errc <- nil
		}()
	}
	var errs []error
	for range e.cfg.CeilingLoops {
		errs = append(errs, <-errc)
	}
	drainTime := time.Since(start)
	stop()
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	// Single round trips straight on the store.
	var lat []time.Duration
	for i := 0; i < e.cfg.RoundTrips; i++ {
		t := time.Now()
		if _, err := e.raw.Enqueue(ctx, []core.EnqueueRequest{{Queue: queue, Task: "bench-raw", Payload: []byte(`{"seq":0}`)}}); err != nil {
			return Result{}, fmt.Errorf("enqueue: %w", err)
		}
		jobs, err := e.raw.Claim(ctx, core.ClaimRequest{Queue: queue, WorkerID: "ceiling-rt", Limit: 1, LeaseTTL: time.Minute})
		if err != nil || len(jobs) != 1 {
			return Result{}, fmt.Errorf("claim one: %d jobs, %v", len(jobs), err)
		}
		if errs, err := e.raw.Complete(ctx, []core.Completion{{Lease: jobs[0].Lease}}); err != nil || errs[0] != nil {
			return Result{}, fmt.Errorf("complete one: %v %v", err, errs)
		}
		lat = append(lat, time.Since(t))
	}
	u1 := readUsage()
	res := Result{
		Scenario:    name,
		Jobs:        n,
		SpawnPerSec: rate(n, enqTime),
		DrainPerSec: rate(n, drainTime),
		ToDone:      percentiles(lat),
		CPUSeconds:  (u1.cpu - u0.cpu).Seconds(),
		PeakRSSMiB:  float64(u1.peakRSS) / (1 << 20),
	}
	if d, example := seen.completedTwice(); d > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("%s claimed and completed more than once by the raw loop (e.g. %s)", plural(d, "job"), example))
	}
	res.Problems = append(res.Problems, e.checkCounts(ctx, queue, n+e.cfg.RoundTrips)...)
	return res, nil
}
