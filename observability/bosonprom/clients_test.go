package bosonprom_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/boson-go/boson/core"
	"github.com/boson-go/boson/observability/bosonprom"
	boson "github.com/boson-go/boson/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestClientCounters: the spawn counters of two clients of one process
// are exported summed by queue and task, with one latency histogram each.
func TestClientCounters(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	second, err := boson.NewClient(f.b, boson.ClientOptions{Clock: f.clock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := boson.Spawn(ctx, f.client, double, 1, boson.WithIdempotencyKey("k")); err != nil {
		t.Fatal(err)
	}
	if _, err := boson.Spawn(ctx, second, double, 1, boson.WithIdempotencyKey("k")); err != nil {
		t.Fatal(err)
	}
	if _, err := boson.Spawn(ctx, second, double, 2, boson.WithIdempotencyKey("k")); !errors.Is(err, core.ErrIdempotencyConflict) {
		t.Fatalf("conflict: %v", err)
	}
	if _, err := boson.SpawnBatch(ctx, f.client, double, []int{3, 4}, boson.WithQueue("other")); err != nil {
		t.Fatal(err)
	}
	if err := f.client.PutTaskConfig(ctx, core.TaskConfig{Task: "limited", MaxInFlight: 1}); err != nil {
		t.Fatal(err)
	}
	limited := boson.NewTask[int, int]("limited")
	for i := range 2 {
		_, err := boson.Spawn(ctx, second, limited, i)
		if i == 1 && !errors.Is(err, core.ErrRateLimited) {
			t.Fatalf("rate limit: %v", err)
		}
	}
	c, err := bosonprom.New(bosonprom.Options{Clients: []*boson.Client{f.client}})
	if err != nil {
		t.Fatal(err)
	}
	c.AddClient(second)
	c.AddClient(nil)
	want := `
# HELP boson_client_spawned_total Jobs the backend stored for the client's spawns.
# TYPE boson_client_spawned_total counter
boson_client_spawned_total{queue="default",task="double"} 1
boson_client_spawned_total{queue="default",task="limited"} 1
boson_client_spawned_total{queue="other",task="double"} 2
# HELP boson_client_reused_total Spawns answered with an existing job through their idempotency key.
# TYPE boson_client_reused_total counter
boson_client_reused_total{queue="default",task="double"} 1
boson_client_reused_total{queue="default",task="limited"} 0
boson_client_reused_total{queue="other",task="double"} 0
# HELP boson_client_conflicts_total Spawns refused because their idempotency key holds another request.
# TYPE boson_client_conflicts_total counter
boson_client_conflicts_total{queue="default",task="double"} 1
boson_client_conflicts_total{queue="default",task="limited"} 0
boson_client_conflicts_total{queue="other",task="double"} 0
# HELP boson_client_rate_limited_total Spawns refused by the task's enqueue limits.
# TYPE boson_client_rate_limited_total counter
boson_client_rate_limited_total{queue="default",task="double"} 0
boson_client_rate_limited_total{queue="default",task="limited"} 1
boson_client_rate_limited_total{queue="other",task="double"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"boson_client_spawned_total", "boson_client_reused_total", "boson_client_conflicts_total", "boson_client_rate_limited_total"); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "boson_client_spawn_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := m.GetLabel()[0].GetValue() + "/" + m.GetLabel()[1].GetValue()
			calls[key] = m.GetHistogram().GetSampleCount()
			if len(m.GetHistogram().GetBucket()) != len(boson.SpawnBuckets) {
				t.Errorf("%d buckets", len(m.GetHistogram().GetBucket()))
			}
		}
	}
	if calls["default/double"] != 3 || calls["other/double"] != 1 || calls["default/limited"] != 2 {
		t.Errorf("spawn calls in the histograms: %v", calls)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
	if _, err := bosonprom.New(bosonprom.Options{Clients: []*boson.Client{nil}}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("nil client: %v", err)
	}
}
