package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/boson-go/boson/core"
)

// Scenario names, in the order Run runs them.
const (
	ScenarioCeiling   = "ceiling"
	ScenarioBatch     = "batch"
	ScenarioMixed     = "mixed"
	ScenarioRoundTrip = "roundtrip"
	ScenarioIdle      = "idle"
	ScenarioScaling   = "scaling"
)

// AllScenarios lists every scenario. DefaultScenarios leaves out scaling,
// which enqueues a million jobs and takes minutes.
var (
	AllScenarios     = []string{ScenarioCeiling, ScenarioBatch, ScenarioMixed, ScenarioRoundTrip, ScenarioIdle, ScenarioScaling}
	DefaultScenarios = []string{ScenarioCeiling, ScenarioBatch, ScenarioMixed, ScenarioRoundTrip, ScenarioIdle}
)

// Config sets the size of every scenario. Zero fields take the defaults of
// DefaultConfig.
type Config struct {
	// Scenarios to run; empty means DefaultScenarios.
	Scenarios []string `json:"scenarios"`
	// Runs repeats the ceiling, batch, mixed and round-trip scenarios;
	// figures are the medians of the runs.
	Runs int `json:"runs"`
	// Jobs is N, the jobs of one batch spawn and drain.
	Jobs int `json:"jobs"`
	// Concurrency is W, the worker's handler slots.
	Concurrency int `json:"concurrency"`
	// SpawnBatch is how many jobs one spawn call sends.
	SpawnBatch int `json:"spawn_batch"`
	// Spawners is how many goroutines spawn at once.
	Spawners int `json:"spawners"`
	// Work is how long the non-trivial handler sleeps.
	Work time.Duration `json:"work"`
	// MixedRate is the spawn rate of the mixed load, in jobs per second.
	MixedRate int `json:"mixed_rate"`
	// MixedDuration is how long the mixed load spawns.
	MixedDuration time.Duration `json:"mixed_duration"`
	// RoundTrips is how many single jobs the round-trip scenario times.
	RoundTrips int `json:"round_trips"`
	// CeilingBatch is the claim limit (and completion batch) of the raw loop.
	CeilingBatch int `json:"ceiling_batch"`
	// CeilingLoops is how many raw claim-and-complete loops run at once.
	CeilingLoops int `json:"ceiling_loops"`
	// ScaleSmall and ScaleLarge are the two backlogs of the scaling scenario.
	ScaleSmall int `json:"scale_small"`
	ScaleLarge int `json:"scale_large"`
	// ScaleMeasure is how many jobs are drained (and timed) from each backlog.
	ScaleMeasure int `json:"scale_measure"`
	// IdleDuration is how long the idle worker is watched.
	IdleDuration time.Duration `json:"idle_duration"`
	// StallTimeout fails a phase that makes no progress for this long.
	StallTimeout time.Duration `json:"stall_timeout"`
}

// DefaultConfig is the configuration of the published figures.
var DefaultConfig = Config{
	Scenarios:     DefaultScenarios,
	Runs:          3,
	Jobs:          20_000,
	Concurrency:   100,
	SpawnBatch:    1_000,
	Spawners:      2,
	Work:          time.Millisecond,
	MixedRate:     2_000,
	MixedDuration: 5 * time.Second,
	RoundTrips:    200,
	CeilingBatch:  500,
	CeilingLoops:  2,
	ScaleSmall:    10_000,
	ScaleLarge:    1_000_000,
	ScaleMeasure:  10_000,
	IdleDuration:  10 * time.Second,
	StallTimeout:  60 * time.Second,
}

// WithDefaults fills the zero fields of c from DefaultConfig.
func (c Config) WithDefaults() Config {
	d := DefaultConfig
	if len(c.Scenarios) == 0 {
		c.Scenarios = d.Scenarios
	}
	setInt := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	setDur := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	setInt(&c.Runs, d.Runs)
	setInt(&c.Jobs, d.Jobs)
	setInt(&c.Concurrency, d.Concurrency)
	setInt(&c.SpawnBatch, d.SpawnBatch)
	setInt(&c.Spawners, d.Spawners)
	setDur(&c.Work, d.Work)
	setInt(&c.MixedRate, d.MixedRate)
	setDur(&c.MixedDuration, d.MixedDuration)
	setInt(&c.RoundTrips, d.RoundTrips)
	setInt(&c.CeilingBatch, d.CeilingBatch)
	setInt(&c.CeilingLoops, d.CeilingLoops)
	setInt(&c.ScaleSmall, d.ScaleSmall)
	setInt(&c.ScaleLarge, d.ScaleLarge)
	setInt(&c.ScaleMeasure, d.ScaleMeasure)
	setDur(&c.IdleDuration, d.IdleDuration)
	setDur(&c.StallTimeout, d.StallTimeout)
	return c
}

// Validate reports an error wrapping core.ErrInvalidArgument for a
// configuration that cannot run.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: bench: %s", core.ErrInvalidArgument, fmt.Sprintf(format, args...))
	}
	for _, s := range c.Scenarios {
		if !slices.Contains(AllScenarios, s) {
			return bad("unknown scenario %q; want one of %s", s, strings.Join(AllScenarios, ", "))
		}
	}
	for name, v := range map[string]int{
		"runs": c.Runs, "jobs": c.Jobs, "concurrency": c.Concurrency, "spawn batch": c.SpawnBatch,
		"spawners": c.Spawners, "mixed rate": c.MixedRate, "round trips": c.RoundTrips,
		"ceiling batch": c.CeilingBatch, "ceiling loops": c.CeilingLoops, "scale small": c.ScaleSmall,
		"scale large": c.ScaleLarge, "scale measure": c.ScaleMeasure,
	} {
		if v < 1 {
			return bad("%s must be at least 1, got %d", name, v)
		}
	}
	if c.SpawnBatch > core.DefaultLimits.MaxBatch || c.CeilingBatch > core.DefaultLimits.MaxBatch {
		return bad("batches may not exceed %d", core.DefaultLimits.MaxBatch)
	}
	if c.ScaleMeasure > c.ScaleSmall {
		return bad("scale measure (%d) may not exceed the small backlog (%d)", c.ScaleMeasure, c.ScaleSmall)
	}
	if c.Work < 0 || c.MixedDuration <= 0 || c.IdleDuration <= 0 || c.StallTimeout <= 0 {
		return bad("durations must be positive")
	}
	return nil
}

func (c Config) has(s string) bool { return slices.Contains(c.Scenarios, s) }
