package bench

import (
	"fmt"
	"strings"
)

// Target is the published goal for one backend: medians of at least three
// runs on a 2-core machine, no-op handler, batch spawn then drain.
type Target struct {
	DrainPerSec    float64 `json:"drain_per_sec"`
	SpawnPerSec    float64 `json:"spawn_per_sec"`
	RoundTripP50us float64 `json:"round_trip_p50_us"`
}

// Targets by store kind.
var Targets = map[string]Target{
	"mem":      {DrainPerSec: 500_000, SpawnPerSec: 1_000_000, RoundTripP50us: 50},
	"sqlite":   {DrainPerSec: 25_000, SpawnPerSec: 150_000, RoundTripP50us: 2_000},
	"postgres": {DrainPerSec: 35_000, SpawnPerSec: 100_000, RoundTripP50us: 5_000},
	"redis":    {DrainPerSec: 50_000, SpawnPerSec: 150_000, RoundTripP50us: 1_000},
	"nats":     {DrainPerSec: 20_000, SpawnPerSec: 50_000, RoundTripP50us: 3_000},
}

// Scaling, idle and default-options goals shared by every durable backend:
// the drain of a worker made from WorkerOptions{} is at least
// DefaultsMinRatio of the tuned worker's in the same run.
const (
	ScalingMinRatio  = 0.8
	IdleMaxPerSec    = 1.0
	DefaultsMinRatio = 0.8
	// LimitMinRatio: a per-key running limit that no key reaches costs
	// at most 10% of the drain (batch-limit over batch-noop, same run).
	LimitMinRatio = 0.9
)

// Verdict compares one figure with its goal.
type Verdict struct {
	Goal   string  `json:"goal"`
	Want   string  `json:"want"`
	Got    string  `json:"got"`
	Value  float64 `json:"value"`
	Met    bool    `json:"met"`
	Absent bool    `json:"absent,omitempty"`
}

// verdicts compares a report's medians with the goals of its kind.
// ratios holds the scaling ratio of each run (large over small drain), if
// any: the verdict takes their median.
func verdicts(kind string, results []Result, ratios []float64) []Verdict {
	find := func(name string) *Result {
		for i := range results {
			if results[i].Scenario == name {
				return &results[i]
			}
		}
		return nil
	}
	var out []Verdict
	t, ok := Targets[kind]
	if ok {
		if r := find("batch-noop"); r != nil {
			out = append(out,
				Verdict{Goal: "drain", Want: fmt.Sprintf(">= %s jobs/s", human(t.DrainPerSec)), Got: human(r.DrainPerSec) + " jobs/s", Value: r.DrainPerSec, Met: r.DrainPerSec >= t.DrainPerSec},
				Verdict{Goal: "batch spawn", Want: fmt.Sprintf(">= %s jobs/s", human(t.SpawnPerSec)), Got: human(r.SpawnPerSec) + " jobs/s", Value: r.SpawnPerSec, Met: r.SpawnPerSec >= t.SpawnPerSec})
		}
		if r := find("roundtrip"); r != nil {
			out = append(out, Verdict{Goal: "single round trip p50", Want: "<= " + micros(t.RoundTripP50us), Got: micros(r.ToDone.P50), Value: r.ToDone.P50, Met: r.ToDone.P50 > 0 && r.ToDone.P50 <= t.RoundTripP50us})
		}
	}
	small, large := find("scaling-small"), find("scaling-large")
	if small != nil && large != nil && small.DrainPerSec > 0 {
		if len(ratios) == 0 {
			ratios = []float64{large.DrainPerSec / small.DrainPerSec}
		}
		goal := fmt.Sprintf("drain with %d queued / with %d queued", large.Backlog, small.Backlog)
		if large.Churned > 0 {
			goal = fmt.Sprintf("drain with %d queued after %d finished / with %d queued", large.Backlog, large.Churned, small.Backlog)
		}
		out = append(out, ratioVerdict(goal, ScalingMinRatio, ratios))
	}
	if r := find("idle"); r != nil {
		v := r.CallsPerSec
		got := fmt.Sprintf("%.2f calls/s", v)
		if r.WirePerSec > v {
			v = r.WirePerSec
			got += fmt.Sprintf(", %.2f on the wire", r.WirePerSec)
		}
		out = append(out, Verdict{Goal: "idle worker", Want: fmt.Sprintf("<= ~%.0f call/s", IdleMaxPerSec), Got: got, Value: v, Met: v <= IdleMaxPerSec*1.5})
	}
	return out
}

// micros formats microseconds as µs or ms.
func micros(us float64) string {
	switch {
	case us >= 10_000:
		return fmt.Sprintf("%.0f ms", us/1000)
	case us >= 1_000:
		return fmt.Sprintf("%.2f ms", us/1000)
	default:
		return fmt.Sprintf("%.0f µs", us)
	}
}

// pairRatios pairs each run of scenario num with the same run of scenario
// den and returns the ratios of their drain rates.
func pairRatios(all map[string][]Result, num, den string) []float64 {
	a, b := all[num], all[den]
	var out []float64
	for i := 0; i < len(a) && i < len(b); i++ {
		if b[i].DrainPerSec > 0 {
			out = append(out, a[i].DrainPerSec/b[i].DrainPerSec)
		}
	}
	return out
}

// ratioVerdict judges the median of ratios against a floor, listing the
// ratios of every run when there are several.
func ratioVerdict(goal string, floor float64, ratios []float64) Verdict {
	ratio := median(ratios)
	got := fmt.Sprintf("%.2f", ratio)
	if len(ratios) > 1 {
		var each []string
		for _, r := range ratios {
			each = append(each, fmt.Sprintf("%.2f", r))
		}
		got += fmt.Sprintf(" (median of %s)", strings.Join(each, ", "))
	}
	return Verdict{Goal: goal, Want: fmt.Sprintf(">= %.2f", floor), Got: got, Value: ratio, Met: ratio >= floor}
}
