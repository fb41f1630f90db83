package soak

import (
	"bytes"
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/conformance/testenv/testreq"
)

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	for q, want := range map[float64]float64{0.5: 500, 0.99: 990, 1: 1000} {
		if got := h.quantile(q); math.Abs(got-want)/want > 0.02 {
			t.Errorf("quantile(%v) = %.1f ms, want %.0f within 2%%", q, got, want)
		}
	}
	var empty histogram
	if empty.quantile(0.5) != 0 {
		t.Error("empty histogram has a median")
	}
	var sub histogram
	sub.add(100 * time.Nanosecond)
	if got := sub.quantile(0.5); got != 0.001 {
		t.Errorf("sub-microsecond latency = %v ms, want 0.001", got)
	}
}

// TestSteadyOffersTheRate drives an immediate queue (every job starts and
// finishes when spawned) and checks the offered rate, the samples and the
// summary.
func TestSteadyOffersTheRate(t *testing.T) {
	var m Meter
	spawned := 0
	spawn := func(_ context.Context, first, n int) error {
		if first%n != 0 {
			t.Errorf("batch starts at %d, not a multiple of %d", first, n)
		}
		for range n {
			m.Started(2 * time.Millisecond)
		}
		m.Done(n)
		spawned += n
		return nil
	}
	spec := Spec{Rate: 2000, Duration: 600 * time.Millisecond, Interval: 200 * time.Millisecond, Batch: 10, Spawners: 1, Stall: time.Second}
	var seen []Sample
	run, err := Steady(context.Background(), spec, spawn, &m, nil, func(s Sample) { seen = append(seen, s) })
	if err != nil {
		t.Fatal(err)
	}
	if spawned != 1200 || run.Spawned != 1200 || run.Done != 1200 {
		t.Fatalf("spawned %d (run %d, done %d), want 1200", spawned, run.Spawned, run.Done)
	}
	if len(run.Samples) < 1 || len(run.Samples) > 4 || len(seen) != len(run.Samples) {
		t.Fatalf("%d samples (%d reported), want 1 to 4 (3 or 4 unless ticks were late)", len(run.Samples), len(seen))
	}
	// How close the offered rate comes to the goal depends on how the
	// machine schedules the spawner, so the checks below hold whatever
	// it does: the rate is never overshot, and the queue drains all that
	// was offered, interval by interval.
	s := run.Summary
	if s.Offered <= 0 || s.Offered > 2100 || math.Abs(s.Drained-s.Offered) > 1 {
		t.Errorf("offered %.0f/s, drained %.0f/s; want at most 2000, drained as offered", s.Offered, s.Drained)
	}
	if s.LastDrained < KeepUp*s.LastOffered {
		t.Errorf("the last interval drained %.0f/s of %.0f/s offered", s.LastDrained, s.LastOffered)
	}
	if math.Abs(s.P50-2)/2 > 0.02 || math.Abs(s.P99-2)/2 > 0.02 {
		t.Errorf("p50 %.3f ms, p99 %.3f ms; want 2", s.P50, s.P99)
	}
	for _, v := range run.Verdicts() {
		if !v.Met && !strings.HasPrefix(v.Goal, "soak: drain of the") {
			t.Errorf("verdict %+v not met by a queue that keeps up", v)
		}
	}
	var md, svg bytes.Buffer
	run.System, run.Store = "test", "none"
	if err := WriteMarkdown(&md, []*Run{run}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "#### test on none") || !strings.Contains(md.String(), "| at | offered/s |") {
		t.Errorf("markdown:\n%s", md.String())
	}
	if err := WriteSVG(&svg, []*Run{run}); err != nil {
		t.Fatal(err)
	}
	if s := svg.String(); !strings.HasPrefix(s, "<svg") || !strings.Contains(s, "<polyline") || !strings.Contains(s, "test on none") {
		t.Errorf("svg:\n%.300s", s)
	}
}

// TestSteadyReportsABacklog checks that a queue that stops finishing jobs
// is reported, not waited for forever.
func TestSteadyReportsABacklog(t *testing.T) {
	var m Meter
	spawn := func(_ context.Context, first, n int) error {
		if first < 100 {
			m.Done(n)
		}
		return nil
	}
	spec := Spec{Rate: 1000, Duration: 300 * time.Millisecond, Interval: 100 * time.Millisecond, Batch: 10, Spawners: 2, Stall: 200 * time.Millisecond}
	run, err := Steady(context.Background(), spec, spawn, &m, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Problems) != 1 || !strings.Contains(run.Problems[0], "backlog did not drain: 100 of 300") {
		t.Fatalf("problems %v", run.Problems)
	}
	met := map[string]bool{}
	for _, v := range run.Verdicts() {
		met[v.Goal] = v.Met
	}
	if met["soak: drain of the last 1 interval(s)"] {
		t.Errorf("a queue that stopped draining kept up: %+v", run.Verdicts())
	}
}

func TestSpecValidate(t *testing.T) {
	good := Spec{Rate: 1, Duration: time.Second, Interval: time.Second, Batch: 1, Spawners: 1, Stall: time.Second}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*Spec){
		"rate":     func(s *Spec) { s.Rate = 0 },
		"interval": func(s *Spec) { s.Interval = 2 * time.Second },
		"batch":    func(s *Spec) { s.Batch = 0 },
		"stall":    func(s *Spec) { s.Stall = 0 },
		"no batch": func(s *Spec) { s.Batch = 2 },
	} {
		s := good
		mutate(&s)
		if s.Validate() == nil {
			t.Errorf("%s: invalid spec accepted", name)
		}
	}
}

// TestPrivateServer starts a private PostgreSQL with initdb and pg_ctl,
// checks that autovacuum is on, reads a schema's statistics and holds the
// xmin horizon.
func TestPrivateServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	if _, err := findBinDir(); err != nil {
		testreq.Unavailable(t, testreq.PostgresServer, err.Error())
	}
	ctx := context.Background()
	srv, err := StartServer(ctx, ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(srv.Dir); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", srv.Dir, err)
		}
	}()
	p, err := NewProbe(ctx, srv.URL+"&schema=ignored", "s")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	set, err := p.Settings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range set {
		got[s.Name] = s.Value
	}
	if got["autovacuum"] != "on" || got["fsync"] != "on" || got["server_version"] == "" {
		t.Errorf("settings %v", got)
	}
	if _, err := p.pool.Exec(ctx, `CREATE SCHEMA s; CREATE TABLE s.t (id int PRIMARY KEY, v int);
		INSERT INTO s.t SELECT g, 0 FROM generate_series(1, 1000) g`); err != nil {
		t.Fatal(err)
	}
	h, err := p.HoldXmin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.pool.Exec(ctx, `UPDATE s.t SET v = 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Logf("no forced stats flush: %v", err)
	}
	var tb Tables
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if tb, err = p.Tables(ctx); err != nil {
			t.Fatal(err)
		}
		if tb.DeadTuples >= 1000 {
			break
		}
	}
	if tb.TableBytes == 0 || tb.IndexBytes == 0 || tb.DeadTuples < 1000 || tb.XminAge < 1 {
		t.Errorf("tables %+v: want sizes, 1000 dead tuples and a held xmin", tb)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if tb, err = p.Tables(ctx); err != nil || tb.XminAge != 0 {
		t.Errorf("after release: %+v %v", tb, err)
	}
	if err := p.Vacuum(ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if tb, err = p.Tables(ctx); err != nil || tb.DeadTuples == 0 {
			break
		}
	}
	if err != nil || tb.DeadTuples != 0 {
		t.Errorf("after vacuum: %d dead tuples (%v)", tb.DeadTuples, err)
	}
}

// TestSlowSpawnsMissTheDrainGoal checks that the drain is judged against
// the rate meant, so a queue that cannot take its spawns in time fails.
func TestSlowSpawnsMissTheDrainGoal(t *testing.T) {
	var m Meter
	spawn := func(_ context.Context, _, n int) error {
		time.Sleep(20 * time.Millisecond) // at most 500 jobs/s from one spawner
		m.Done(n)
		return nil
	}
	spec := Spec{Rate: 1000, Duration: 400 * time.Millisecond, Interval: 200 * time.Millisecond, Batch: 10, Spawners: 1, Stall: time.Second}
	run, err := Steady(context.Background(), spec, spawn, &m, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if run.Summary.Offered > 700 {
		t.Fatalf("offered %.0f/s from a spawner capped at 500/s", run.Summary.Offered)
	}
	for _, v := range run.Verdicts() {
		if strings.HasPrefix(v.Goal, "soak: drain") && v.Met {
			t.Errorf("drain verdict met at %s: %+v", v.Got, v)
		}
	}
}

// TestDrainVerdictJudgesTheGoal checks the drain verdict on fixed figures:
// met when the last window drains at least KeepUp of the rate meant,
// missed below it, whatever was offered.
func TestDrainVerdictJudgesTheGoal(t *testing.T) {
	for _, c := range []struct {
		drained float64
		met     bool
	}{{2000, true}, {KeepUp * 2000, true}, {KeepUp*2000 - 1, false}, {0, false}} {
		run := &Run{Rate: 2000, Samples: []Sample{{}}, Summary: Summary{Window: 1, LastOffered: 2000, LastDrained: c.drained, FirstP99: 2, LastP99: 2}}
		for _, v := range run.Verdicts() {
			if strings.HasPrefix(v.Goal, "soak: drain of the") && v.Met != c.met {
				t.Errorf("drained %.0f/s of 2000/s: verdict %+v, want met=%v", c.drained, v, c.met)
			}
		}
	}
}

func TestFormatBar(t *testing.T) {
	for _, c := range []struct {
		frac  float64
		width int
		want  string
	}{
		{0, 4, "[    ]"},
		{0.5, 4, "[==  ]"},
		{0.99, 4, "[=== ]"},
		{1, 4, "[====]"},
		{1.5, 4, "[====]"},
		{-1, 4, "[    ]"},
		{0.5, 0, "[]"},
		{0.5, -3, "[]"},
	} {
		if got := FormatBar(c.frac, c.width); got != c.want {
			t.Errorf("FormatBar(%g, %d) = %q, want %q", c.frac, c.width, got, c.want)
		}
	}
}
