package bosonprom_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	"github.com/boson-go/boson/observability/bosonprom"
	boson "github.com/boson-go/boson/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var double = boson.NewTask[int, int]("double")

type fixture struct {
	clock  *core.ManualClock
	b      *mem.Backend
	client *boson.Client
	w      *boson.Worker
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clock := core.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := mem.New(mem.Options{Clock: clock, Logger: quiet})
	t.Cleanup(func() { _ = b.Close() })
	client, err := boson.NewClient(b, boson.ClientOptions{Clock: clock, Logger: quiet, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w, err := boson.NewWorker(b, boson.WorkerOptions{
		ID: "w1", Queues: []string{"default", "other"}, Clock: clock, Logger: quiet,
		PollInterval: 5 * time.Millisecond, RescueInterval: -1, RetentionInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	err = boson.Register(w, double, func(_ context.Context, n int) (int, error) {
		if n < 0 {
			return 0, boson.Permanent(errors.New("negative"))
		}
		return 2 * n, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{clock: clock, b: b, client: client, w: w}
}

func (f *fixture) run(t *testing.T, inputs ...int) {
	t.Helper()
	if err := f.w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.w.Shutdown(context.Background()) })
	for _, n := range inputs {
		h, err := boson.Spawn(context.Background(), f.client, double, n)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = h.Wait(context.Background())
	}
}

func TestWorkerCounters(t *testing.T) {
	f := newFixture(t)
	f.run(t, 1, 2, -1)
	c, err := bosonprom.New(bosonprom.Options{Workers: []*boson.Worker{f.w}})
	if err != nil {
		t.Fatal(err)
	}
	// Outcomes are counted when their write lands, just after Wait sees it.
	settled := func() bool {
		tot := f.w.Metrics().Total
		var observed int64
		for _, n := range tot.ExecutionHistogram {
			observed += n
		}
		return tot.Completed == 2 && tot.Failed == 1 && observed == 3
	}
	deadline := time.Now().Add(10 * time.Second)
	for !settled() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	want := `
# HELP boson_worker_completed_total Attempts that completed their job.
# TYPE boson_worker_completed_total counter
boson_worker_completed_total{queue="default",worker="w1"} 2
boson_worker_completed_total{queue="other",worker="w1"} 0
# HELP boson_worker_failed_total Attempts that ended with an error (retried or final).
# TYPE boson_worker_failed_total counter
boson_worker_failed_total{queue="default",worker="w1"} 1
boson_worker_failed_total{queue="other",worker="w1"} 0
# HELP boson_worker_claimed_total Jobs the worker claimed.
# TYPE boson_worker_claimed_total counter
boson_worker_claimed_total{queue="default",worker="w1"} 3
boson_worker_claimed_total{queue="other",worker="w1"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"boson_worker_completed_total", "boson_worker_failed_total", "boson_worker_claimed_total"); err != nil {
		t.Fatal(err)
	}
	// One histogram series per worker and queue, counting every execution.
	if n := testutil.CollectAndCount(c, "boson_worker_execution_duration_seconds"); n != 2 {
		t.Fatalf("%d histogram series, want 2", n)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "boson_worker_execution_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			queue := m.GetLabel()[0].GetValue()
			if want := map[string]uint64{"default": 3, "other": 0}[queue]; h.GetSampleCount() != want {
				t.Errorf("queue %s: %d executions in the histogram, want %d", queue, h.GetSampleCount(), want)
			}
			if len(h.GetBucket()) != len(boson.ExecutionBuckets) {
				t.Errorf("%d buckets", len(h.GetBucket()))
			}
		}
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

func TestQueueDepthsCached(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for i := range 3 {
		if _, err := boson.Spawn(ctx, f.client, double, i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := boson.Spawn(ctx, f.client, double, 9, boson.WithQueue("other")); err != nil {
		t.Fatal(err)
	}
	if err := f.client.PutQueueConfig(ctx, core.QueueConfig{Queue: "other", Paused: true}); err != nil {
		t.Fatal(err)
	}
	c, err := bosonprom.New(bosonprom.Options{Backend: f.b, Clock: f.clock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	want := func(queued float64) string {
		return `
# HELP boson_queue_paused 1 when the queue is paused (only known when every queue is listed).
# TYPE boson_queue_paused gauge
boson_queue_paused{queue="default"} 0
boson_queue_paused{queue="other"} 1
# HELP boson_queue_stats_up 1 when the last refresh of queue depths succeeded.
# TYPE boson_queue_stats_up gauge
boson_queue_stats_up 1
` + strings.ReplaceAll(`# HELP boson_queue_jobs Jobs in the queue by state (as of the last refresh).
# TYPE boson_queue_jobs gauge
boson_queue_jobs{queue="default",state="cancelled"} 0
boson_queue_jobs{queue="default",state="failed"} 0
boson_queue_jobs{queue="default",state="queued"} QUEUED
boson_queue_jobs{queue="default",state="running"} 0
boson_queue_jobs{queue="default",state="sleeping"} 0
boson_queue_jobs{queue="default",state="succeeded"} 0
boson_queue_jobs{queue="other",state="cancelled"} 0
boson_queue_jobs{queue="other",state="failed"} 0
boson_queue_jobs{queue="other",state="queued"} 1
boson_queue_jobs{queue="other",state="running"} 0
boson_queue_jobs{queue="other",state="sleeping"} 0
boson_queue_jobs{queue="other",state="succeeded"} 0
`, "QUEUED", strconv.FormatFloat(queued, 'g', -1, 64))
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want(3))); err != nil {
		t.Fatal(err)
	}
	// A new job is not seen until the cache expires.
	if _, err := boson.Spawn(ctx, f.client, double, 7); err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want(3))); err != nil {
		t.Fatalf("within the cache TTL: %v", err)
	}
	f.clock.Advance(5 * time.Second)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want(4))); err != nil {
		t.Fatalf("after the cache TTL: %v", err)
	}

	// A failing store keeps the last values and reports stats_up 0.
	_ = f.b.Close()
	f.clock.Advance(5 * time.Second)
	const down = `
# HELP boson_queue_stats_up 1 when the last refresh of queue depths succeeded.
# TYPE boson_queue_stats_up gauge
boson_queue_stats_up 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(down), "boson_queue_stats_up"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "boson_queue_jobs"); n != 12 {
		t.Fatalf("%d depth series after a failed refresh, want the last 12", n)
	}
}

func TestSelectedQueues(t *testing.T) {
	f := newFixture(t)
	if _, err := boson.Spawn(context.Background(), f.client, double, 1, boson.WithQueue("other")); err != nil {
		t.Fatal(err)
	}
	c, err := bosonprom.New(bosonprom.Options{Backend: f.b, Queues: []string{"other"}, CacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "boson_queue_jobs"); n != 6 {
		t.Fatalf("%d series, want 6", n)
	}
	if n := testutil.CollectAndCount(c, "boson_queue_paused"); n != 0 {
		t.Fatalf("paused exported for selected queues")
	}
	if _, err := bosonprom.New(bosonprom.Options{Queues: []string{""}}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("empty queue name: %v", err)
	}
	if _, err := bosonprom.New(bosonprom.Options{Workers: []*boson.Worker{nil}}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("nil worker: %v", err)
	}
}

// TestTwoBackendsOneRegistry: const labels tell apart the collectors of
// two backends registered together.
func TestTwoBackendsOneRegistry(t *testing.T) {
	a, b := newFixture(t), newFixture(t)
	reg := prometheus.NewPedanticRegistry()
	for name, f := range map[string]*fixture{"a": a, "b": b} {
		c, err := bosonprom.New(bosonprom.Options{Backend: f.b, ConstLabels: prometheus.Labels{"store": name}})
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := boson.Spawn(context.Background(), a.client, double, 1); err != nil {
		t.Fatal(err)
	}
	n, err := testutil.GatherAndCount(reg, "boson_queue_stats_up", "boson_queue_jobs")
	if err != nil || n != 2+6 {
		t.Fatalf("%d series (%v), want 8", n, err)
	}
}
