package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// Flow control on every backend of the matrix, in one process. A backend
// that does not implement core.FlowController fails these scenarios: flow
// control is part of the contract the matrix checks.

// flowJob is the input of the flow scenarios' tasks: a key and the job's
// place among the jobs of that key.
type flowJob struct {
	Key string `json:"key"`
	N   int    `json:"n"`
}

var flowTask = boson.NewTask[flowJob, struct{}]("flow-work")

// requireFlow fails the test when b does not enforce flow control.
func requireFlow(t interface {
	Helper()
	Fatalf(string, ...any)
}, name string, b core.QueueBackend) core.FlowController {
	t.Helper()
	fc, ok := b.(core.FlowController)
	if !ok {
		t.Fatalf("backend %s does not implement core.FlowController: flow control is not enforced there", name)
	}
	return fc
}

// flowLog records starts and ends of handlers in order, in one process.
type flowLog struct {
	mu   sync.Mutex
	recs []flowRecord
}

type flowRecord struct {
	Start bool
	Key   string
	N     int
}

func (l *flowLog) add(start bool, j flowJob) {
	l.mu.Lock()
	l.recs = append(l.recs, flowRecord{start, j.Key, j.N})
	l.mu.Unlock()
}

func (l *flowLog) snapshot() []flowRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]flowRecord(nil), l.recs...)
}

// maxConcurrent returns, per key, the most handlers that ran at once by
// the records.
func maxConcurrent(recs []flowRecord) map[string]int {
	cur, peak := map[string]int{}, map[string]int{}
	for _, r := range recs {
		if r.Start {
			cur[r.Key]++
			peak[r.Key] = max(peak[r.Key], cur[r.Key])
		} else {
			cur[r.Key]--
		}
	}
	return peak
}

// sequenceTrace returns, per key, the records as "s0 e0 s1 ...".
func sequenceTrace(recs []flowRecord) map[string]string {
	out := map[string]string{}
	for _, r := range recs {
		c := "e"
		if r.Start {
			c = "s"
		}
		if out[r.Key] != "" {
			out[r.Key] += " "
		}
		out[r.Key] += fmt.Sprintf("%s%d", c, r.N)
	}
	return out
}

// wantTrace is the trace of n jobs run one at a time in order.
func wantTrace(n int) string {
	s := ""
	for i := range n {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("s%d e%d", i, i)
	}
	return s
}

// errorLog is a slog handler that keeps the errors a worker logs.
type errorLog struct {
	mu  sync.Mutex
	n   int
	msg string
}

func (h *errorLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }

func (h *errorLog) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	if h.msg == "" {
		h.msg = r.Message
		r.Attrs(func(a slog.Attr) bool { h.msg += " " + a.String(); return true })
	}
	return nil
}

func (h *errorLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *errorLog) WithGroup(string) slog.Handler      { return h }

func (h *errorLog) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

func (h *errorLog) first() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.msg
}

var flowScenarios = []scenario{
	{"flow_while_active_key_freed", func(e *env) {
		requireFlow(e, e.factory.Name, e.b)
		release := make(chan struct{})
		w := e.worker(nil)
		e.must(boson.Register(w, flowTask, func(ctx context.Context, j flowJob) (struct{}, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return struct{}{}, nil
		}))
		opts := []boson.SpawnOption{boson.WithIdempotencyKey("report-acme"), boson.WithUnique(core.UniqueWhileActive)}
		h1, err := boson.Spawn(e.ctx, e.client, flowTask, flowJob{Key: "acme"}, opts...)
		e.must(err)
		if j := e.job(h1.ID()); j.Unique != core.UniqueWhileActive || j.IdempotencyKey != "report-acme" {
			e.Fatalf("stored unique fields %q %q", j.Unique, j.IdempotencyKey)
		}
		// While the job is active the key holds: same request reused,
		// another request a conflict.
		again, err := boson.Spawn(e.ctx, e.client, flowTask, flowJob{Key: "acme"}, opts...)
		e.must(err)
		if !again.Reused() || again.ID() != h1.ID() {
			e.Fatalf("active key: reused=%v id=%s, want %s", again.Reused(), again.ID(), h1.ID())
		}
		if _, err := boson.Spawn(e.ctx, e.client, flowTask, flowJob{Key: "acme", N: 1}, opts...); !errors.Is(err, core.ErrIdempotencyConflict) {
			e.Fatalf("active key, other input: %v", err)
		}
		e.start(w)
		e.waitState(h1.ID(), core.StateRunning)
		if again, err = boson.Spawn(e.ctx, e.client, flowTask, flowJob{Key: "acme"}, opts...); err != nil || again.ID() != h1.ID() {
			e.Fatalf("running job does not hold its key: %v %v", again, err)
		}
		close(release)
		_, err = h1.Wait(e.ctx)
		e.must(err)
		// Terminal: the key is free, and a new job takes it, even with
		// another input.
		// (Delayed, so that it stays active while the lookups run.)
		h2, err := boson.Spawn(e.ctx, e.client, flowTask, flowJob{Key: "acme", N: 1}, append(opts, boson.WithDelay(time.Hour))...)
		e.must(err)
		if h2.Reused() || h2.ID() == h1.ID() {
			e.Fatalf("key not freed on completion: reused=%v", h2.Reused())
		}
		if js, ok := e.b.(core.JobSearcher); ok {
			j, err := js.FindByIdempotencyKey(e.ctx, core.DefaultQueue, "report-acme")
			if err != nil || j.ID != h2.ID() {
				e.Fatalf("FindByIdempotencyKey = %s %v, want the holder %s", j.ID, err, h2.ID())
			}
			e.must(h2.Cancel(e.ctx, "not needed"))
			if j, err := js.FindByIdempotencyKey(e.ctx, core.DefaultQueue, "report-acme"); !errors.Is(err, core.ErrNotFound) {
				e.Fatalf("FindByIdempotencyKey after the holder ended = %s %v, want core.ErrNotFound", j.ID, err)
			}
		}

		// Uniqueness by args, while active: the key is the args.
		argOpts := []boson.SpawnOption{boson.WithUniqueArgs(), boson.WithUnique(core.UniqueWhileActive), boson.WithDelay(time.Hour)}
		a1, err := boson.Spawn(e.ctx, e.client, flowTask, flowJob{Key: "beta", N: 7}, argOpts...)
		e.must(err)
		a2, err := boson.Spawn(e.ctx, e.client, flowTask, flowJob{Key: "beta", N: 7}, argOpts...)
		e.must(err)
		a3, err := boson.Spawn(e.ctx, e.client, flowTask, flowJob{Key: "beta", N: 8}, argOpts...)
		e.must(err)
		if !a2.Reused() || a2.ID() != a1.ID() || a3.Reused() {
			e.Fatalf("unique args: %v %v", a2.Reused(), a3.Reused())
		}
		e.must(a1.Cancel(e.ctx, "done with it"))
		a4, err := boson.Spawn(e.ctx, e.client, flowTask, flowJob{Key: "beta", N: 7}, argOpts...)
		e.must(err)
		if a4.Reused() || a4.ID() == a1.ID() {
			e.Fatal("unique args key not freed by cancellation")
		}
		// The cancelled job cannot retake the key while a4 holds it.
		if err := a1.Retry(e.ctx); !errors.Is(err, core.ErrIdempotencyConflict) {
			e.Fatalf("retry of a job whose key another holds: %v", err)
		}
	}},
	{"flow_sequence_order", func(e *env) {
		requireFlow(e, e.factory.Name, e.b)
		var log flowLog
		w := e.worker(func(o *boson.WorkerOptions) { o.Concurrency = 6 })
		e.must(boson.Register(w, flowTask, func(ctx context.Context, j flowJob) (struct{}, error) {
			log.add(true, j)
			time.Sleep(5 * time.Millisecond)
			log.add(false, j)
			return struct{}{}, nil
		}))
		const perKey = 4
		var hs []*boson.Handle[struct{}]
		for n := range perKey {
			for _, k := range []string{"k1", "k2", "k3"} {
				h, err := boson.Spawn(e.ctx, e.client, flowTask, flowJob{Key: k, N: n}, boson.WithSequenceKey(k))
				e.must(err)
				hs = append(hs, h)
			}
		}
		// Unkeyed jobs are not held by the sequences.
		for n := range 3 {
			h, err := boson.Spawn(e.ctx, e.client, flowTask, flowJob{Key: "free", N: n})
			e.must(err)
			hs = append(hs, h)
		}
		if j := e.job(hs[0].ID()); j.SequenceKey != "k1" {
			e.Fatalf("stored sequence key %q", j.SequenceKey)
		}
		e.start(w)
		for _, h := range hs {
			_, err := h.Wait(e.ctx)
			e.must(err)
		}
		tr := sequenceTrace(log.snapshot())
		for _, k := range []string{"k1", "k2", "k3"} {
			if tr[k] != wantTrace(perKey) {
				e.Fatalf("sequence %s ran %q, want %q", k, tr[k], wantTrace(perKey))
			}
		}
	}},
	{"flow_limit_drain_many_keys", func(e *env) {
		// A drain under a per-key limit that no key reaches, over 100
		// keys, with many slots: every claim and completion updates the
		// store's running counts concurrently. Each job runs exactly once
		// and nothing is left for a rescue (a completion the store failed
		// would leave its job running until its lease expired).
		requireFlow(e, e.factory.Name, e.b)
		e.must(e.client.SetFlowLimits(e.ctx, flowTask.Name(), boson.FlowLimits{MaxRunningPerKey: 1000}))
		const jobs, keys = 2000, 100
		var (
			mu   sync.Mutex
			runs = map[flowJob]int{}
		)
		errs := &errorLog{}
		w := e.worker(func(o *boson.WorkerOptions) { o.Concurrency = 100; o.Logger = slog.New(errs) })
		e.must(boson.Register(w, flowTask, func(ctx context.Context, j flowJob) (struct{}, error) {
			mu.Lock()
			runs[j]++
			mu.Unlock()
			return struct{}{}, nil
		}))
		var reqs []boson.Request
		for i := range jobs {
			k := fmt.Sprintf("key-%03d", i%keys)
			reqs = append(reqs, flowTask.Request(flowJob{Key: k, N: i}, boson.WithLimitKey(k)))
		}
		_, err := e.client.SpawnRequests(e.ctx, reqs...)
		e.must(err)
		e.start(w)
		deadline := time.Now().Add(50 * time.Second)
		for {
			n, err := e.b.CountJobs(e.ctx, core.JobFilter{})
			e.must(err)
			if n[core.StateSucceeded] == jobs {
				break
			}
			if time.Now().After(deadline) {
				e.Fatalf("not drained: %v; the worker logged %d errors, the first: %s", n, errs.count(), errs.first())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if c := errs.count(); c > 0 {
			e.Fatalf("the worker logged %d errors, the first: %s", c, errs.first())
		}
		mu.Lock()
		defer mu.Unlock()
		if len(runs) != jobs {
			e.Fatalf("%d distinct jobs ran, want %d", len(runs), jobs)
		}
		for j, n := range runs {
			if n != 1 {
				e.Fatalf("job %+v ran %d times", j, n)
			}
		}
	}},
	{"flow_limit_per_key", func(e *env) {
		fc := requireFlow(e, e.factory.Name, e.b)
		e.must(e.client.SetFlowLimits(e.ctx, flowTask.Name(), boson.FlowLimits{MaxRunningPerKey: 2}))
		if cfg, err := e.b.GetTaskConfig(e.ctx, flowTask.Name()); err != nil || cfg.MaxRunningPerKey != 2 {
			e.Fatalf("stored config %+v %v", cfg, err)
		}
		var log flowLog
		release := make(chan struct{})
		w := e.worker(func(o *boson.WorkerOptions) { o.Concurrency = 10 })
		e.must(boson.Register(w, flowTask, func(ctx context.Context, j flowJob) (struct{}, error) {
			log.add(true, j)
			<-release
			log.add(false, j)
			return struct{}{}, nil
		}))
		var hs []*boson.Handle[struct{}]
		for n := range 4 {
			for _, k := range []string{"acme", "beta"} {
				h, err := boson.Spawn(e.ctx, e.client, flowTask, flowJob{Key: k, N: n}, boson.WithLimitKey(k))
				e.must(err)
				hs = append(hs, h)
			}
		}
		e.start(w)
		// Both keys saturate at 2 and the claim passes over the rest.
		e.eventually("both keys at their limit", func() bool {
			p := maxConcurrent(log.snapshot())
			return p["acme"] == 2 && p["beta"] == 2
		})
		counts, err := fc.RunningByKey(e.ctx, flowTask.Name(), 0)
		e.must(err)
		if fmt.Sprint(counts) != "[{acme 2} {beta 2}]" {
			e.Fatalf("RunningByKey = %v", counts)
		}
		close(release)
		for _, h := range hs {
			_, err := h.Wait(e.ctx)
			e.must(err)
		}
		for k, p := range maxConcurrent(log.snapshot()) {
			if p > 2 {
				e.Fatalf("key %s ran %d at once, limit 2", k, p)
			}
		}
	}},
}
