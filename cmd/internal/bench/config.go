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
	ScenarioSoak      = "soak"
	// ScenarioBatchNoop is the no-op half of batch alone.
	ScenarioBatchNoop = "batch-noop"
	// ScenarioBatchLimit is the no-op drain again with a per-key running
	// limit over LimitKeys keys that no key reaches, beside batch-noop:
	// the ratio of the two drains is the cost of a limit.
	ScenarioBatchLimit = "batch-limit"
)

// LimitKeys is how many limit keys the batch-limit scenario spreads its
// jobs over (job i has key i mod LimitKeys).
const LimitKeys = 100

// AllScenarios lists every scenario. DefaultScenarios leaves out scaling,
// which enqueues a million jobs, and soak, which runs for minutes.
var (
	AllScenarios     = []string{ScenarioCeiling, ScenarioBatch, ScenarioBatchNoop, ScenarioBatchLimit, ScenarioMixed, ScenarioRoundTrip, ScenarioIdle, ScenarioScaling, ScenarioSoak}
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
	// ScaleChurn is how many jobs the scaling scenario claims and completes
	// on the large backlog's queue before filling it (0, the default: none),
	// so that the large drain runs beside finished jobs and, on PostgreSQL,
	// their dead tuples.
	ScaleChurn int `json:"scale_churn,omitempty"`
	// IdleDuration is how long the idle worker is watched.
	IdleDuration time.Duration `json:"idle_duration"`
	// StallTimeout fails a phase that makes no progress for this long.
	StallTimeout time.Duration `json:"stall_timeout"`
	// Defaults runs each batch scenario a second time with a worker made
	// from boson.WorkerOptions{} (only its queue set), beside the tuned W.
	Defaults bool `json:"defaults,omitempty"`
	// Soak is the steady load of the soak scenario.
	Soak SoakConfig `json:"soak"`
}

// SoakConfig sets the soak scenario: a steady spawn load with retention
// on, sampled every Interval, and the same load again with the xmin
// horizon held (PostgreSQL).
type SoakConfig struct {
	// Rate is the offered load in jobs/s, for Duration, sampled every Interval.
	Rate     int           `json:"rate"`
	Duration time.Duration `json:"duration"`
	Interval time.Duration `json:"interval"`
	// Batch is the jobs per spawn call; Spawners the goroutines spawning.
	Batch    int `json:"batch"`
	Spawners int `json:"spawners"`
	// Retention is how long finished jobs are kept (the queue's stored
	// RetentionTTL); RetentionInterval how often the worker deletes them.
	Retention         time.Duration `json:"retention"`
	RetentionInterval time.Duration `json:"retention_interval"`
	// Hold is "both" (without, then with the held transaction), "off" or
	// "only". Stores other than PostgreSQL run without.
	Hold string `json:"hold"`
}

// Hold modes of the soak.
const (
	HoldBoth = "both"
	HoldOff  = "off"
	HoldOnly = "only"
)

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
	Soak: SoakConfig{Rate: 3_000, Duration: 5 * time.Minute, Interval: time.Minute, Batch: 10, Spawners: 4,
		Retention: time.Minute, RetentionInterval: time.Second, Hold: HoldBoth},
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
	setInt(&c.Soak.Rate, d.Soak.Rate)
	setDur(&c.Soak.Duration, d.Soak.Duration)
	setDur(&c.Soak.Interval, d.Soak.Interval)
	setInt(&c.Soak.Batch, d.Soak.Batch)
	setInt(&c.Soak.Spawners, d.Soak.Spawners)
	setDur(&c.Soak.Retention, d.Soak.Retention)
	setDur(&c.Soak.RetentionInterval, d.Soak.RetentionInterval)
	if c.Soak.Hold == "" {
		c.Soak.Hold = d.Soak.Hold
	}
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
		"soak rate": c.Soak.Rate, "soak batch": c.Soak.Batch, "soak spawners": c.Soak.Spawners,
	} {
		if v < 1 {
			return bad("%s must be at least 1, got %d", name, v)
		}
	}
	if c.SpawnBatch > core.DefaultLimits.MaxBatch || c.CeilingBatch > core.DefaultLimits.MaxBatch {
		return bad("batches may not exceed %d", core.DefaultLimits.MaxBatch)
	}
	if c.ScaleChurn < 0 {
		return bad("scale churn must not be negative, got %d", c.ScaleChurn)
	}
	if c.ScaleMeasure > c.ScaleSmall {
		return bad("scale measure (%d) may not exceed the small backlog (%d)", c.ScaleMeasure, c.ScaleSmall)
	}
	if c.Work < 0 || c.MixedDuration <= 0 || c.IdleDuration <= 0 || c.StallTimeout <= 0 {
		return bad("durations must be positive")
	}
	if c.Soak.Duration <= 0 || c.Soak.Interval <= 0 || c.Soak.Retention <= 0 || c.Soak.RetentionInterval <= 0 {
		return bad("soak durations must be positive")
	}
	if c.Soak.Interval > c.Soak.Duration {
		return bad("soak interval (%v) may not exceed the soak duration (%v)", c.Soak.Interval, c.Soak.Duration)
	}
	if perPass := float64(c.Soak.Rate) * c.Soak.RetentionInterval.Seconds(); perPass > float64(core.DefaultLimits.MaxBatch) {
		return bad("soak: %d jobs/s finish %.0f jobs per retention interval, more than one pass deletes (%d); shorten --soak-retention-interval",
			c.Soak.Rate, perPass, core.DefaultLimits.MaxBatch)
	}
	if c.Soak.Batch > core.DefaultLimits.MaxBatch {
		return bad("batches may not exceed %d", core.DefaultLimits.MaxBatch)
	}
	if !slices.Contains([]string{HoldBoth, HoldOff, HoldOnly}, c.Soak.Hold) {
		return bad("soak hold %q; want %s, %s or %s", c.Soak.Hold, HoldBoth, HoldOff, HoldOnly)
	}
	return nil
}

func (c Config) has(s string) bool { return slices.Contains(c.Scenarios, s) }

// batches reports whether the no-op and the working batch scenarios run;
// batch-limit brings the no-op drain it is compared with.
func (c Config) batches() (noop, work bool) {
	return c.has(ScenarioBatch) || c.has(ScenarioBatchNoop) || c.has(ScenarioBatchLimit), c.has(ScenarioBatch)
}
