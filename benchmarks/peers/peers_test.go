package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/cmd/soak"
	"github.com/boson-go/boson/conformance/testenv/testreq"
)

func TestCompareMediansAndPairedRatios(t *testing.T) {
	boson := []BatchFigures{{Spawn: 100, Drain: 40}, {Spawn: 300, Drain: 10}, {Spawn: 200, Drain: 30}}
	peer := []BatchFigures{{Spawn: 50, Drain: 20}, {Spawn: 100, Drain: 10}, {Spawn: 100, Drain: 10}}
	r := compare(boson, peer, spawnOf, spawnOf)
	if r.Boson != 200 || r.Peer != 100 || r.Ratio != 2 {
		t.Errorf("spawn %+v, want medians 200 and 100, ratio 2", r)
	}
	r = compare(boson, peer, drainOf, drainOf)
	if r.Ratio != 2 { // ratios 2, 1, 3
		t.Errorf("drain %+v, want the median of the paired ratios, 2", r)
	}
}

func TestParseRejectsBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--stores", "postgres,mysql"},
		{"--runs", "0"},
		{"--steady-hold", "sometimes"},
		{"--goqite-synchronous", "OFF"},
		{"--steady-rate", "0"},
		{"extra"},
	} {
		if _, err := parse(args, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	o, err := parse([]string{"--stores", "redis", "--steady=false", "--steady-rate", "0"}, io.Discard)
	if err != nil || o.stores != "redis" {
		t.Errorf("a steady setting is judged without the steady load: %v", err)
	}
}

// services names the BOSON_TEST_REQUIRE service behind each URL variable.
var services = map[string]string{
	"BOSON_TEST_POSTGRES_URL": testreq.Postgres,
	"BOSON_TEST_REDIS_URL":    testreq.Redis,
	"BOSON_TEST_NATS_URL":     testreq.NATS,
}

// service returns a test service's URL, skipping when it is not set and
// not required.
func service(t *testing.T, env string) string {
	u := os.Getenv(env)
	if u == "" {
		testreq.Unavailable(t, services[env], env+" is not set")
	}
	return u
}

// TestPeersBatch runs each peer's batch spawn and drain on a few hundred
// jobs against the real stores and checks that every job was worked.
func TestPeersBatch(t *testing.T) {
	const n = 300
	ctx := context.Background()
	peers := map[string]func() batchPeer{
		"river": func() batchPeer {
			return &River{URL: service(t, "BOSON_TEST_POSTGRES_URL"), MaxWorkers: 50, FetchCooldown: 2 * time.Millisecond, FetchPoll: time.Second, Spawners: 2, PerCall: 100}
		},
		"asynq": func() batchPeer {
			return &Asynq{URL: service(t, "BOSON_TEST_REDIS_URL"), Concurrency: 20, Spawners: 4}
		},
		"goqite": func() batchPeer {
			return &Goqite{Dir: t.TempDir(), Limit: 20, Synchronous: "NORMAL", PerCall: 100}
		},
		"jetstream": func() batchPeer {
			return &JetStream{URL: service(t, "BOSON_TEST_NATS_URL"), Loops: 2, Fetch: 100, PerCall: 100, Spawners: 2}
		},
	}
	for name, mk := range peers {
		t.Run(name, func(t *testing.T) {
			p := mk()
			f, err := p.Batch(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			if f.Spawn <= 0 || f.Drain <= 0 || f.DrainDefaults != 0 {
				t.Errorf("figures %+v", f)
			}
			if !strings.Contains(p.name(), "v0.") && !strings.Contains(p.name(), "v1.") {
				t.Errorf("name %q carries no version", p.name())
			}
			if len(p.settings()) == 0 {
				t.Error("no settings recorded")
			}
		})
	}
}

// TestRiverSteady offers a short steady load to River on the test
// PostgreSQL, with the horizon held, and checks the samples.
func TestRiverSteady(t *testing.T) {
	r := &River{URL: service(t, "BOSON_TEST_POSTGRES_URL"), MaxWorkers: 50, FetchCooldown: 2 * time.Millisecond, FetchPoll: time.Second,
		Retention: time.Minute, Spawners: 2, PerCall: 10}
	spec := soak.Spec{Rate: 200, Duration: 2 * time.Second, Interval: time.Second, Batch: 10, Spawners: 2, Held: true, Stall: 30 * time.Second}
	run, err := r.Steady(context.Background(), spec, time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Problems) > 0 || run.Spawned != 400 || run.Done != 400 || run.Xmin == "" || len(run.Samples) < 2 {
		t.Fatalf("run %+v", run)
	}
	if s := run.Summary; s.Starts != 400 || s.P50 <= 0 {
		t.Errorf("summary %+v: want 400 first starts with latencies", s)
	}
	if run.Samples[len(run.Samples)-1].Tables == nil {
		t.Error("no table statistics of River's schema")
	}
	var md bytes.Buffer
	rep := &Report{Steady: []*soak.Run{run}}
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| xmin held | River v0.51") {
		t.Errorf("markdown:\n%s", md.String())
	}
}
