package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	boson "github.com/boson-go/boson/runtime"
)

// runBatch spawns cfg.Jobs jobs of task, then starts a worker with
// concurrency slots (or userDefaults) and times the drain.
func (e *env) runBatch(ctx context.Context, name string, task boson.Task[benchIn, struct{}], concurrency int) (Result, error) {
	n := e.cfg.Jobs
	queue := e.queueName(name)
	tr := newTracker(n, int64(n))
	e.counting.OnComplete(tr.finished)
	defer e.counting.OnComplete(nil)
	if task == taskLimit {
		// A worker owns at most twice its slots (running or writing their
		// outcome), so no key ever reaches this limit: the store checks
		// it at every claim and never holds a job back.
		slots := concurrency
		if slots <= 0 {
			slots = 1000
		}
		if err := e.client.SetFlowLimits(ctx, task.Name(), boson.FlowLimits{MaxRunningPerKey: 2*slots + 1}); err != nil {
			return Result{}, err
		}
	}
	u0, c0 := readUsage(), e.counting.Calls()
	spawnTime, err := e.spawn(ctx, name+" spawn", queue, task, n, tr)
	if err != nil {
		return Result{}, err
	}
	w, err := e.newWorker(queue, concurrency, tr)
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	if err := w.Start(ctx); err != nil {
		return Result{}, err
	}
	werr := e.waitDone(ctx, name+" drain", tr)
	drainTime := time.Since(start)
	if err := shutdown(w); err != nil && werr == nil {
		werr = fmt.Errorf("worker shutdown: %w", err)
	}
	u1 := readUsage()
	if werr != nil {
		return Result{}, werr
	}
	startLat, doneLat := tr.latencies()
	res := Result{
		Scenario:    name,
		Jobs:        n,
		SpawnPerSec: rate(n, spawnTime),
		DrainPerSec: rate(n, drainTime),
		ToStart:     percentiles(startLat),
		ToDone:      percentiles(doneLat),
		CPUSeconds:  (u1.cpu - u0.cpu).Seconds(),
		PeakRSSMiB:  float64(u1.peakRSS) / (1 << 20),
		CallsPerJob: perJob(diffCalls(c0, e.counting.Calls()), n),
	}
	res.Problems = append(tr.verify(n), e.checkCounts(ctx, queue, n)...)
	return res, nil
}

// runMixed starts a worker, then spawns small batches at cfg.MixedRate for
// cfg.MixedDuration, alternating the no-op and the working task, and waits
// until every job is done.
func (e *env) runMixed(ctx context.Context) (Result, error) {
	const name, batch = "mixed", 10
	total := e.cfg.MixedRate * int(e.cfg.MixedDuration/time.Millisecond) / 1000
	total = max(batch, total/batch*batch)
	queue := e.queueName(name)
	tr := newTracker(total, int64(total))
	e.counting.OnComplete(tr.finished)
	defer e.counting.OnComplete(nil)
	w, err := e.newWorker(queue, e.cfg.Concurrency, tr)
	if err != nil {
		return Result{}, err
	}
	u0, c0 := readUsage(), e.counting.Calls()
	if err := w.Start(ctx); err != nil {
		return Result{}, err
	}
	defer func() { _ = shutdown(w) }()
	interval := time.Duration(float64(time.Second) * batch / float64(e.cfg.MixedRate))
	start := time.Now()
	stop := e.prog.track(name+" spawn", int64(total), tr.done.Load)
	reqs := make([]boson.Request, 0, batch)
	for i := 0; i < total; i += batch {
		if d := time.Until(start.Add(time.Duration(i/batch) * interval)); d > 0 {
			time.Sleep(d)
		}
		task := taskNoop
		if (i/batch)%2 == 1 {
			task = taskWork
		}
		reqs = reqs[:0]
		for j := i; j < i+batch; j++ {
			reqs = append(reqs, task.Request(benchIn{Seq: j}, boson.WithQueue(queue)))
		}
		at := time.Now()
		sp, err := e.client.SpawnRequests(ctx, reqs...)
		if err != nil {
			stop()
			return Result{}, fmt.Errorf("spawn: %w", err)
		}
		ids := make([]string, len(sp))
		for k, s := range sp {
			ids[k] = s.Job.ID
		}
		tr.spawned(ids, at)
	}
	spawnTime := time.Since(start)
	stop()
	if err := e.waitDone(ctx, name+" drain", tr); err != nil {
		return Result{}, err
	}
	all := time.Since(start)
	if err := shutdown(w); err != nil {
		return Result{}, fmt.Errorf("worker shutdown: %w", err)
	}
	u1 := readUsage()
	startLat, doneLat := tr.latencies()
	res := Result{
		Scenario:    name,
		Jobs:        total,
		SpawnPerSec: rate(total, spawnTime),
		DrainPerSec: rate(total, all),
		ToStart:     percentiles(startLat),
		ToDone:      percentiles(doneLat),
		CPUSeconds:  (u1.cpu - u0.cpu).Seconds(),
		PeakRSSMiB:  float64(u1.peakRSS) / (1 << 20),
		CallsPerJob: perJob(diffCalls(c0, e.counting.Calls()), total),
	}
	res.Problems = append(tr.verify(total), e.checkCounts(ctx, queue, total)...)
	return res, nil
}

// runRoundTrip times cfg.RoundTrips single jobs, one after another, through
// an otherwise idle worker.
func (e *env) runRoundTrip(ctx context.Context) (Result, error) {
	const name, warmup = "roundtrip", 5
	n := e.cfg.RoundTrips
	queue := e.queueName(name)
	tr := newTracker(n+warmup, 0)
	tr.doneCh = make(chan string, 64)
	e.counting.OnComplete(tr.finished)
	defer e.counting.OnComplete(nil)
	w, err := e.newWorker(queue, e.cfg.Concurrency, tr)
	if err != nil {
		return Result{}, err
	}
	if err := w.Start(ctx); err != nil {
		return Result{}, err
	}
	defer func() { _ = shutdown(w) }()
	var count atomic.Int64
	stop := e.prog.track(name, int64(n+warmup), count.Load)
	defer stop()
	u0 := readUsage()
	var measured []string
	for i := 0; i < n+warmup; i++ {
		if i == warmup {
			u0 = readUsage()
		}
		at := time.Now()
		sp, err := e.client.SpawnRequests(ctx, taskNoop.Request(benchIn{Seq: i}, boson.WithQueue(queue)))
		if err != nil {
			return Result{}, fmt.Errorf("spawn: %w", err)
		}
		id := sp[0].Job.ID
		tr.spawned([]string{id}, at)
		if i >= warmup {
			measured = append(measured, id)
		}
		timeout := time.NewTimer(e.cfg.StallTimeout)
	wait:
		for {
			select {
			case got := <-tr.doneCh:
				if got == id {
					break wait
				}
			case <-timeout.C:
				return Result{}, fmt.Errorf("round trip %d: job %s not done after %v", i, id, e.cfg.StallTimeout)
			case <-ctx.Done():
				return Result{}, ctx.Err()
			}
		}
		timeout.Stop()
		count.Add(1)
	}
	u1 := readUsage()
	var startLat, doneLat []time.Duration
	for _, id := range measured {
		r, _ := tr.get(id)
		startLat = append(startLat, time.Duration(r.start-r.spawn))
		doneLat = append(doneLat, time.Duration(r.done-r.spawn))
	}
	res := Result{
		Scenario:   name,
		Jobs:       n,
		ToStart:    percentiles(startLat),
		ToDone:     percentiles(doneLat),
		CPUSeconds: (u1.cpu - u0.cpu).Seconds(),
		PeakRSSMiB: float64(u1.peakRSS) / (1 << 20),
	}
	res.Problems = append(tr.verify(n+warmup), e.checkCounts(ctx, queue, n+warmup)...)
	return res, nil
}
