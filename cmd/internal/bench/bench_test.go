package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

func TestPercentiles(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Microsecond)
	}
	p := percentiles(d)
	if p.N != 100 || p.P50 != 51 || p.P90 != 90 || p.P99 != 99 {
		t.Fatalf("percentiles = %+v", p)
	}
	if p := percentiles(nil); p != (Percentiles{}) {
		t.Fatalf("percentiles(nil) = %+v", p)
	}
}

func TestMedianResult(t *testing.T) {
	runs := []Result{
		{Scenario: "batch-noop", DrainPerSec: 3, ToDone: Percentiles{P50: 30}, CallsPerJob: map[string]float64{"Claim": 0.3}},
		{Scenario: "batch-noop", DrainPerSec: 1, ToDone: Percentiles{P50: 10}, CallsPerJob: map[string]float64{"Claim": 0.1}, Problems: []string{"x"}},
		{Scenario: "batch-noop", DrainPerSec: 2, ToDone: Percentiles{P50: 20}, CallsPerJob: map[string]float64{"Claim": 0.2}},
	}
	m := medianResult(runs)
	if m.Runs != 3 || m.DrainPerSec != 2 || m.ToDone.P50 != 20 || m.CallsPerJob["Claim"] != 0.2 || len(m.Problems) != 1 {
		t.Fatalf("median = %+v", m)
	}
}

func TestVerdicts(t *testing.T) {
	v := verdicts("postgres", []Result{
		{Scenario: "batch-noop", DrainPerSec: 40_000, SpawnPerSec: 50_000},
		{Scenario: "roundtrip", ToDone: Percentiles{P50: 4_000, N: 1}},
		{Scenario: "scaling-small", DrainPerSec: 100, Backlog: 10},
		{Scenario: "scaling-large", DrainPerSec: 79, Backlog: 1000},
		{Scenario: "idle", CallsPerSec: 1, WirePerSec: 3},
	}, nil)
	met := map[string]bool{}
	for _, x := range v {
		met[x.Goal] = x.Met
	}
	want := map[string]bool{"drain": true, "batch spawn": false, "single round trip p50": true,
		"drain with 1000 queued / with 10 queued": false, "idle worker": false}
	for goal, w := range want {
		if got, ok := met[goal]; !ok || got != w {
			t.Errorf("%s: met %v (present %v), want %v", goal, got, ok, w)
		}
	}
	// With several runs the verdict is the median of the runs' ratios.
	ratios := pairRatios(map[string][]Result{
		"scaling-small": {{DrainPerSec: 100}, {DrainPerSec: 100}, {DrainPerSec: 100}},
		"scaling-large": {{DrainPerSec: 50}, {DrainPerSec: 90}, {DrainPerSec: 85}},
	}, "scaling-large", "scaling-small")
	v = verdicts("postgres", []Result{
		{Scenario: "scaling-small", DrainPerSec: 100, Backlog: 10},
		{Scenario: "scaling-large", DrainPerSec: 79, Backlog: 1000},
	}, ratios)
	if len(v) != 1 || !v[0].Met || v[0].Value != 0.85 || !strings.Contains(v[0].Got, "median of 0.50, 0.90, 0.85") {
		t.Fatalf("scaling verdict %+v", v)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := DefaultConfig
	bad.Scenarios = []string{"nope"}
	if err := bad.Validate(); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("unknown scenario: %v", err)
	}
	bad = DefaultConfig
	bad.ScaleMeasure = bad.ScaleSmall + 1
	if err := bad.Validate(); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("measure above backlog: %v", err)
	}
	bad = DefaultConfig
	bad.ScaleChurn = -1
	if err := bad.Validate(); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("negative churn: %v", err)
	}
}

// TestScalingWithChurnOnMem runs the scaling scenario with churn: the
// large queue's churned jobs all end succeeded before its backlog is
// filled, the result and the verdict name them, and the self-check holds.
func TestScalingWithChurnOnMem(t *testing.T) {
	b := mem.New(mem.Options{})
	defer b.Close()
	cfg := Config{Scenarios: []string{ScenarioScaling}, Runs: 1, Concurrency: 10, ScaleSmall: 300, ScaleLarge: 900, ScaleMeasure: 200, ScaleChurn: 700}
	rep, err := Run(context.Background(), Store{Backend: b, Kind: "mem"}, cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("self-check failed: %+v", rep.Results)
	}
	var large *Result
	for i, r := range rep.Results {
		if r.Scenario == "scaling-large" {
			large = &rep.Results[i]
		}
	}
	if large == nil || large.Churned != 700 || large.Backlog != 900 || large.Jobs != 200 {
		t.Fatalf("scaling-large result %+v", large)
	}
	counts, err := b.CountJobs(context.Background(), core.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if n := counts[core.StateSucceeded]; n < 700+200+200 {
		t.Errorf("%d jobs succeeded, want at least the 700 churned and the 2×200 drained", n)
	}
	want := "drain with 900 queued after 700 finished / with 300 queued"
	found := false
	for _, v := range rep.Verdicts {
		found = found || v.Goal == want
	}
	if !found {
		t.Errorf("no verdict %q in %+v", want, rep.Verdicts)
	}
	if cell := jobsCell(*large); cell != "200 of 900, after 700 finished" {
		t.Errorf("jobs cell %q", cell)
	}
}

// TestCountingKeepsNotifier checks that the decorator keeps the wrapped
// backend's wake-ups and reports completions.
func TestCountingKeepsNotifier(t *testing.T) {
	ctx := context.Background()
	b := mem.New(mem.Options{})
	defer b.Close()
	c, wrapped := Wrap(b)
	if _, ok := wrapped.(core.Notifier); !ok {
		t.Fatal("the decorator of a Notifier is not a Notifier")
	}
	var done []string
	c.OnComplete(func(id string, _ time.Time) { done = append(done, id) })
	res, err := wrapped.Enqueue(ctx, []core.EnqueueRequest{{Task: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := wrapped.Claim(ctx, core.ClaimRequest{Queue: core.DefaultQueue, WorkerID: "w", Limit: 1, LeaseTTL: time.Minute})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v %v", jobs, err)
	}
	if _, err := wrapped.Complete(ctx, []core.Completion{{Lease: jobs[0].Lease}}); err != nil {
		t.Fatal(err)
	}
	if len(done) != 1 || done[0] != res[0].Job.ID {
		t.Fatalf("completions reported: %v", done)
	}
	calls := c.Calls()
	if calls["Enqueue"] != 1 || calls["Claim"] != 1 || calls["Complete"] != 1 || c.Total() != 3 {
		t.Fatalf("calls = %v", calls)
	}
}

func TestWriteSVGAndTable(t *testing.T) {
	rep := &Report{Kind: "mem", Config: DefaultConfig, AllRuns: map[string][]Result{}}
	for _, r := range []Result{
		{Scenario: "ceiling", SpawnPerSec: 1e5, DrainPerSec: 2e5, ToDone: Percentiles{P50: 3, N: 1}, Jobs: 10},
		{Scenario: "batch-noop", SpawnPerSec: 5e4, DrainPerSec: 4e4, Jobs: 10, CPUSeconds: 0.001},
		{Scenario: "roundtrip", ToDone: Percentiles{P50: 20, N: 1}},
		{Scenario: "idle", CallsPerSec: 1, CallsByMethod: map[string]float64{"Claim": 1}},
	} {
		rep.AllRuns[r.Scenario] = []Result{r}
	}
	rep.finish()
	if b := fig(rep, "batch-noop"); b.DrainOfCeiling != 0.2 {
		t.Errorf("drain of ceiling = %v, want 0.2", b.DrainOfCeiling)
	}
	var svg, table bytes.Buffer
	if err := WriteSVG(&svg, []*Report{rep}); err != nil {
		t.Fatal(err)
	}
	if s := svg.String(); !strings.HasPrefix(s, "<svg") || !strings.HasSuffix(strings.TrimSpace(s), "</svg>") || !strings.Contains(s, "40.0k") {
		t.Fatalf("svg:\n%s", s)
	}
	if err := WriteTable(&table, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"batch-noop", "idle worker: 1.00 backend calls/s", "target"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"### mem",
		"| drain | ≥ 500.0k jobs/s | 40.0k jobs/s | **no** |",
		"| batch-noop | 10 | 50.0k | 40.0k |",
		"Idle worker: 1.00 backend calls/s.",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

// TestSoakAndDefaultsOnMem runs the soak and the defaults comparison on
// the in-memory store and checks the shape of what they report.
func TestSoakAndDefaultsOnMem(t *testing.T) {
	b := mem.New(mem.Options{})
	defer b.Close()
	cfg := Config{Scenarios: []string{ScenarioBatchNoop, ScenarioSoak}, Runs: 1, Jobs: 200, Defaults: true,
		Soak: SoakConfig{Rate: 400, Duration: time.Second, Interval: 250 * time.Millisecond, Retention: time.Second, RetentionInterval: 100 * time.Millisecond}}
	rep, err := Run(context.Background(), Store{Backend: b, Kind: "mem"}, cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("self-check failed: %+v", rep.Results)
	}
	got := map[string]Result{}
	for _, r := range rep.Results {
		got[r.Scenario] = r
	}
	for _, name := range []string{"batch-noop", "batch-noop-defaults", "soak"} {
		if got[name].Jobs == 0 {
			t.Errorf("no %s result: %+v", name, rep.Results)
		}
	}
	if _, ok := got["batch-work"]; ok {
		t.Error("batch-noop ran the working batch too")
	}
	if _, ok := got["soak-held"]; ok {
		t.Error("a held-horizon soak ran on a store without PostgreSQL")
	}
	if len(rep.Soak) != 1 || len(rep.Soak[0].Samples) < 3 || rep.Soak[0].Spawned != 400 || rep.Soak[0].Done != 400 {
		t.Fatalf("soak runs %+v", rep.Soak)
	}
	if s := got["soak"]; s.ToStart.N != 400 || s.ToStart.P50 <= 0 {
		t.Errorf("soak spawn-to-start %+v, want 400 first starts", s.ToStart)
	}
	goals := map[string]bool{}
	for _, v := range rep.Verdicts {
		goals[v.Goal] = true
	}
	for _, g := range []string{"drain with WorkerOptions{} / with -w 100", "soak: drain of the last 1 interval(s)"} {
		if !goals[g] {
			t.Errorf("no verdict %q in %+v", g, rep.Verdicts)
		}
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "#### boson on mem") || !strings.Contains(md.String(), "| batch-noop-defaults |") {
		t.Errorf("markdown:\n%s", md.String())
	}
}

func TestSoakConfigValidate(t *testing.T) {
	bad := DefaultConfig
	bad.Soak.Rate, bad.Soak.RetentionInterval = 20_000, time.Second
	if err := bad.Validate(); !errors.Is(err, core.ErrInvalidArgument) || !strings.Contains(err.Error(), "retention interval") {
		t.Errorf("retention that cannot keep up: %v", err)
	}
	bad = DefaultConfig
	bad.Soak.Hold = "sometimes"
	if err := bad.Validate(); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("unknown hold mode: %v", err)
	}
}

func TestProgressTrack(t *testing.T) {
	var buf bytes.Buffer
	stop := progress{w: &buf}.track("spawn", 4, func() int64 { return 2 })
	stop()
	want := "\r" + fmt.Sprintf("%-24s", "spawn") + " [" + strings.Repeat("=", 15) + strings.Repeat(" ", 15) + "]  50% 2/4 "
	if s := buf.String(); !strings.HasPrefix(s, want) || !strings.HasSuffix(s, "/s \n") {
		t.Fatalf("bar %q, want it to start %q", s, want)
	}
	buf.Reset()
	progress{}.track("none", 4, func() int64 { return 2 })()
	progress{w: &buf}.track("empty", 0, func() int64 { return 0 })()
	if buf.Len() != 0 {
		t.Fatalf("a nil writer or a total of 0 drew %q", buf.String())
	}
}
