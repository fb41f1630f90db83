// Package bench is the benchmark behind "boson bench": it drives a store
// through the real runtime (batch spawn and drain, a steady mixed load,
// single round trips), measures the store's raw ceiling in the same run,
// counts an idle worker's calls, checks that every job ran exactly once, and
// reports tables, JSON and an SVG chart.
package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/boson-go/boson/cmd/soak"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// Store describes the store under test for Run.
type Store struct {
	// Backend is the store's backend; Kind is "mem", "sqlite", "postgres",
	// "redis" or "nats"; Location where it lives.
	Backend  core.QueueBackend
	Kind     string
	Location string
	// Wire, when not nil, counts commands sent to the store's server.
	Wire func() (int64, bool)
	// PostgresURL and Schema, for a PostgreSQL store, are where its tables
	// live: the soak reads their statistics and holds the xmin horizon on
	// connections of its own.
	PostgresURL, Schema string
}

// Report is the outcome of one Run.
type Report struct {
	Kind     string    `json:"kind"`
	Location string    `json:"location"`
	Started  time.Time `json:"started"`
	Seconds  float64   `json:"seconds"`
	Machine  Machine   `json:"machine"`
	Config   Config    `json:"config"`
	// Results holds the medians, one per scenario.
	Results []Result `json:"results"`
	// AllRuns holds every run of every scenario.
	AllRuns map[string][]Result `json:"all_runs"`
	// LoadStart and LoadEnd are the machine's load averages (1, 5, 15
	// minutes) when the run began and ended: a busy machine slows every
	// figure but the CPU per job.
	LoadStart string `json:"load_start,omitempty"`
	LoadEnd   string `json:"load_end,omitempty"`
	// Verdicts compare the medians with the published targets.
	Verdicts []Verdict `json:"verdicts"`
	// Soak holds the soak's loads, sample by sample.
	Soak []*soak.Run `json:"soak,omitempty"`
}

// OK reports whether every self-check passed.
func (r *Report) OK() bool {
	for _, res := range r.Results {
		if len(res.Problems) > 0 {
			return false
		}
	}
	return true
}

// Machine describes where the benchmark ran.
type Machine struct {
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	CPUs   int    `json:"cpus"`
	CPU    string `json:"cpu"`
	Go     string `json:"go"`
	Procs  int    `json:"gomaxprocs"`
	Memory string `json:"memory"`
}

func machine() Machine {
	m := Machine{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), Go: runtime.Version(), Procs: runtime.GOMAXPROCS(0)}
	m.CPU = soak.CPUModel()
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		m.Memory = strings.Join(strings.Fields(strings.TrimPrefix(line, "MemTotal:")), " ")
	}
	return m
}

// Run runs the configured scenarios on st. Progress bars go to progressTo
// when it is not nil, one line per finished phase to logTo when not nil.
// An error means a scenario could not finish; self-check failures are
// reported in the results' Problems instead.
func Run(ctx context.Context, st Store, cfg Config, progressTo, logTo io.Writer) (*Report, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	counting, backend := Wrap(st.Backend)
	logger := slog.New(slog.DiscardHandler)
	client, err := boson.NewClient(backend, boson.ClientOptions{Logger: logger})
	if err != nil {
		return nil, err
	}
	say := func(format string, args ...any) {
		if logTo != nil {
			fmt.Fprintf(logTo, format+"\n", args...)
		}
	}
	e := &env{raw: st.Backend, counting: counting, backend: backend, client: client, cfg: cfg, prog: progress{w: progressTo}, logger: logger,
		kind: st.Kind, say: say}
	if st.Kind == "postgres" {
		e.pgURL, e.pgSchema = st.PostgresURL, st.Schema
	}
	rep := &Report{Kind: st.Kind, Location: st.Location, Started: time.Now().UTC(), Machine: machine(), Config: cfg, AllRuns: map[string][]Result{}, LoadStart: soak.LoadAvg()}
	record := func(r Result, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", r.Scenario, err)
		}
		rep.AllRuns[r.Scenario] = append(rep.AllRuns[r.Scenario], r)
		say("%s %s: %s", st.Kind, r.Scenario, summary(r))
		return nil
	}
	named := func(name string) func(Result, error) (Result, error) {
		return func(r Result, err error) (Result, error) { r.Scenario = name; return r, err }
	}
	for run := 0; run < cfg.Runs; run++ {
		if cfg.has(ScenarioCeiling) {
			if err := record(named("ceiling")(e.runCeiling(ctx))); err != nil {
				return rep, err
			}
		}
		noop, work := cfg.batches()
		batch := func(name string, task boson.Task[benchIn, struct{}]) error {
			if err := record(named(name)(e.runBatch(ctx, name, task, cfg.Concurrency))); err != nil {
				return err
			}
			if cfg.Defaults {
				return record(named(name + "-defaults")(e.runBatch(ctx, name+"-defaults", task, userDefaults)))
			}
			return nil
		}
		// batch-limit runs beside batch-noop, before it in every other
		// run, so that neither drain always has the warmer process.
		limitFirst := cfg.has(ScenarioBatchLimit) && run%2 == 1
		limit := func() error {
			if !cfg.has(ScenarioBatchLimit) {
				return nil
			}
			return record(named("batch-limit")(e.runBatch(ctx, "batch-limit", taskLimit, cfg.Concurrency)))
		}
		if limitFirst {
			if err := limit(); err != nil {
				return rep, err
			}
		}
		if noop {
			if err := batch("batch-noop", taskNoop); err != nil {
				return rep, err
			}
		}
		if !limitFirst {
			if err := limit(); err != nil {
				return rep, err
			}
		}
		if work {
			if err := batch("batch-work", taskWork); err != nil {
				return rep, err
			}
		}
		if cfg.has(ScenarioMixed) {
			if err := record(named("mixed")(e.runMixed(ctx))); err != nil {
				return rep, err
			}
		}
		if cfg.has(ScenarioRoundTrip) {
			if err := record(named("roundtrip")(e.runRoundTrip(ctx))); err != nil {
				return rep, err
			}
		}
	}
	if cfg.has(ScenarioIdle) {
		var wire wireCounter
		if st.Wire != nil {
			wire = st.Wire
		}
		if err := record(named("idle")(e.runIdle(ctx, wire))); err != nil {
			return rep, err
		}
	}
	if cfg.has(ScenarioScaling) {
		// Each run fills fresh queues; the verdict is the median of the
		// runs' ratios, since one drain of a few thousand jobs is short.
		for run := 0; run < cfg.Runs; run++ {
			if err := record(named("scaling-small")(e.runScaling(ctx, "scaling-small", cfg.ScaleSmall, 0))); err != nil {
				return rep, err
			}
			if err := record(named("scaling-large")(e.runScaling(ctx, "scaling-large", cfg.ScaleLarge, cfg.ScaleChurn))); err != nil {
				return rep, err
			}
		}
	}
	if cfg.has(ScenarioSoak) {
		plain, held := e.soakRuns()
		for _, h := range []bool{false, true} {
			if (h && !held) || (!h && !plain) {
				continue
			}
			name := "soak"
			if h {
				name = "soak-held"
			}
			res, run, err := e.runSoak(ctx, h)
			if err := record(named(name)(res, err)); err != nil {
				return rep, err
			}
			rep.Soak = append(rep.Soak, run)
		}
	}
	rep.finish()
	return rep, nil
}

// finish computes medians, ceiling fractions and verdicts.
func (rep *Report) finish() {
	order := []string{"ceiling", "batch-noop", "batch-noop-defaults", "batch-limit", "batch-work", "batch-work-defaults", "mixed", "roundtrip", "idle",
		"scaling-small", "scaling-large", "soak", "soak-held"}
	rep.Results = nil
	for _, name := range order {
		if runs := rep.AllRuns[name]; len(runs) > 0 {
			rep.Results = append(rep.Results, medianResult(runs))
		}
	}
	var ceil *Result
	for i := range rep.Results {
		if rep.Results[i].Scenario == "ceiling" {
			ceil = &rep.Results[i]
		}
	}
	if ceil != nil {
		for i := range rep.Results {
			r := &rep.Results[i]
			if r.Scenario == "ceiling" {
				continue
			}
			if r.SpawnPerSec > 0 && ceil.SpawnPerSec > 0 {
				r.SpawnOfCeiling = r.SpawnPerSec / ceil.SpawnPerSec
			}
			if r.DrainPerSec > 0 && ceil.DrainPerSec > 0 {
				r.DrainOfCeiling = r.DrainPerSec / ceil.DrainPerSec
			}
			if r.ToDone.P50 > 0 && ceil.ToDone.P50 > 0 {
				r.DoneOfCeiling = ceil.ToDone.P50 / r.ToDone.P50
			}
		}
	}
	rep.Verdicts = verdicts(rep.Kind, rep.Results, pairRatios(rep.AllRuns, "scaling-large", "scaling-small"))
	if ratios := pairRatios(rep.AllRuns, "batch-limit", "batch-noop"); len(ratios) > 0 {
		rep.Verdicts = append(rep.Verdicts, ratioVerdict(fmt.Sprintf("drain with a per-key limit over %d keys / plain drain", LimitKeys), LimitMinRatio, ratios))
	}
	if ratios := pairRatios(rep.AllRuns, "batch-noop-defaults", "batch-noop"); len(ratios) > 0 {
		rep.Verdicts = append(rep.Verdicts, ratioVerdict(fmt.Sprintf("drain with WorkerOptions{} / with -w %d", rep.Config.Concurrency), DefaultsMinRatio, ratios))
	}
	for _, run := range rep.Soak {
		for _, v := range run.Verdicts() {
			rep.Verdicts = append(rep.Verdicts, Verdict{Goal: v.Goal, Want: v.Want, Got: v.Got, Met: v.Met})
		}
	}
	rep.LoadEnd = soak.LoadAvg()
	rep.Seconds = time.Since(rep.Started).Seconds()
}

// summary is the one-line account of a run used in logs.
func summary(r Result) string {
	var parts []string
	if r.SpawnPerSec > 0 {
		parts = append(parts, "spawn "+human(r.SpawnPerSec)+"/s")
	}
	if r.DrainPerSec > 0 {
		parts = append(parts, "drain "+human(r.DrainPerSec)+"/s")
	}
	if r.ToDone.N > 0 {
		parts = append(parts, "done p50 "+micros(r.ToDone.P50))
	}
	if r.Scenario == "idle" {
		parts = append(parts, fmt.Sprintf("%.2f calls/s, %.2f wire/s", r.CallsPerSec, r.WirePerSec))
	}
	parts = append(parts, fmt.Sprintf("cpu %.2fs", r.CPUSeconds))
	if len(r.Problems) > 0 {
		parts = append(parts, "CHECK FAILED: "+strings.Join(r.Problems, "; "))
	}
	return strings.Join(parts, ", ")
}
