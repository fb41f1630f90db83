package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/cmd/soak"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// soakRuns returns which soak loads to run on this store: without and with
// the held transaction, as cfg.Soak.Hold asks and the store allows.
func (e *env) soakRuns() (plain, held bool) {
	hold := e.cfg.Soak.Hold
	pg := e.pgURL != ""
	return hold != HoldOnly || !pg, hold != HoldOff && pg
}

// runSoak offers the soak's steady load to a worker with retention on and
// samples it every interval (package soak). held keeps a REPEATABLE READ
// transaction open on the store's database for the whole load. The
// latency is the store's own: a claimed job's first start minus its
// creation, as the store recorded them.
func (e *env) runSoak(ctx context.Context, held bool) (Result, *soak.Run, error) {
	name := "soak"
	if held {
		name = "soak-held"
	}
	c := e.cfg.Soak
	queue := e.queueName(name)
	limit := min(core.DefaultLimits.MaxBatch, max(1_000, int(2*float64(c.Rate)*c.RetentionInterval.Seconds())))
	if err := e.raw.PutQueueConfig(ctx, core.QueueConfig{Queue: queue, RetentionTTL: c.Retention, CleanupLimit: limit}); err != nil {
		return Result{}, nil, fmt.Errorf("queue config: %w", err)
	}
	var probe *soak.Probe
	if e.pgURL != "" {
		p, err := soak.NewProbe(ctx, e.pgURL, e.pgSchema)
		if err != nil {
			return Result{}, nil, err
		}
		defer p.Close()
		probe = p
	}
	var m soak.Meter
	var execs atomic.Int64
	e.counting.OnComplete(func(string, time.Time) { m.Done(1) })
	defer e.counting.OnComplete(nil)
	e.counting.OnClaim(func(jobs []core.Job) {
		for _, j := range jobs {
			if j.Attempt == 1 && !j.FirstStartedAt.IsZero() {
				m.Started(j.FirstStartedAt.Sub(j.CreatedAt))
			}
		}
	})
	defer e.counting.OnClaim(nil)
	opts := e.workerOptions(queue, e.cfg.Concurrency)
	opts.RetentionInterval = c.RetentionInterval
	w, err := e.newWorkerWith(opts, func(string, time.Time) { execs.Add(1) })
	if err != nil {
		return Result{}, nil, err
	}
	u0, c0 := readUsage(), e.counting.Calls()
	if err := w.Start(ctx); err != nil {
		return Result{}, nil, err
	}
	defer func() { _ = shutdown(w) }()
	spawn := func(ctx context.Context, first, n int) error {
		task := taskNoop
		if (first/n)%2 == 1 {
			task = taskWork
		}
		reqs := make([]boson.Request, n)
		for i := range reqs {
			reqs[i] = task.Request(benchIn{Seq: first + i}, boson.WithQueue(queue))
		}
		_, err := e.client.SpawnRequests(ctx, reqs...)
		return err
	}
	spec := soak.Spec{Rate: c.Rate, Duration: c.Duration, Interval: c.Interval, Batch: c.Batch, Spawners: c.Spawners, Held: held, Stall: e.cfg.StallTimeout}
	run, err := soak.Steady(ctx, spec, spawn, &m, probe, func(s soak.Sample) {
		e.say("%s %s at %s: %s", e.kind, name, time.Duration(s.End*1e9).Round(time.Second), sampleLine(s))
	})
	if err != nil {
		return Result{}, nil, err
	}
	if err := shutdown(w); err != nil {
		run.Problems = append(run.Problems, "worker shutdown: "+err.Error())
	}
	u1 := readUsage()
	run.System, run.Store = "boson", e.kind
	workers := "Concurrency=" + strconv.Itoa(e.cfg.Concurrency)
	run.Options = []soak.Setting{
		{Name: "worker", Value: workers},
		{Name: "RetentionTTL", Value: c.Retention.String()},
		{Name: "RetentionInterval", Value: c.RetentionInterval.String()},
		{Name: "CleanupLimit", Value: strconv.Itoa(limit)},
		{Name: "spawn", Value: fmt.Sprintf("SpawnRequests from %d goroutines, no-op and %v handlers by turns", c.Spawners, e.cfg.Work)},
	}
	if x := execs.Load(); x != run.Spawned {
		run.Problems = append(run.Problems, fmt.Sprintf("%d handler runs for %d spawned jobs", x, run.Spawned))
	}
	if run.Done != run.Spawned {
		run.Problems = append(run.Problems, fmt.Sprintf("%d completions for %d spawned jobs", run.Done, run.Spawned))
	}
	run.Problems = append(run.Problems, e.checkOnlySucceeded(ctx, queue)...)
	// Leave the next load a table without this one's retained jobs.
	for {
		n, err := e.raw.Cleanup(ctx, core.CleanupRequest{Queue: queue, FinishedBefore: time.Now().Add(time.Minute), Limit: core.DefaultLimits.MaxBatch})
		if err != nil {
			run.Problems = append(run.Problems, "cleanup after the load: "+err.Error())
		}
		if err != nil || n == 0 {
			break
		}
	}
	s := run.Summary
	res := Result{
		Scenario:    name,
		Jobs:        int(run.Spawned),
		SpawnPerSec: s.Offered,
		DrainPerSec: s.Drained,
		ToStart:     Percentiles{P50: s.P50 * 1000, P90: s.P90 * 1000, P99: s.P99 * 1000, N: int(s.Starts)},
		CPUSeconds:  (u1.cpu - u0.cpu).Seconds(),
		PeakRSSMiB:  float64(u1.peakRSS) / (1 << 20),
		CallsPerJob: perJob(diffCalls(c0, e.counting.Calls()), int(run.Spawned)),
		Problems:    run.Problems,
	}
	return res, run, nil
}

// checkOnlySucceeded reports jobs of queue in any state but succeeded
// (retention may have deleted succeeded ones).
func (e *env) checkOnlySucceeded(ctx context.Context, queue string) []string {
	counts, err := e.raw.CountJobs(ctx, core.JobFilter{Queue: queue})
	if err != nil {
		return []string{"count jobs: " + err.Error()}
	}
	var problems []string
	for _, s := range core.AllStates {
		if n := counts[s]; s != core.StateSucceeded && n != 0 {
			problems = append(problems, fmt.Sprintf("backend counts %d %s jobs in %s, want 0", n, s, queue))
		}
	}
	return problems
}

// sampleLine is the one-line account of a soak sample used in logs.
func sampleLine(s soak.Sample) string {
	line := fmt.Sprintf("offered %s/s, drained %s/s, backlog %d, spawn→start p50 %s p99 %s",
		human(s.Offered), human(s.Drained), s.Backlog, micros(s.StartP50*1000), micros(s.StartP99*1000))
	if t := s.Tables; t != nil {
		line += fmt.Sprintf(", tables %.1f MiB + indexes %.1f MiB, %d dead tuples, xmin age %d",
			float64(t.TableBytes)/(1<<20), float64(t.IndexBytes)/(1<<20), t.DeadTuples, t.XminAge)
	}
	return line
}
