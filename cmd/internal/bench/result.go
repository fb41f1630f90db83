package bench

import (
	"reflect"
	"slices"
)

// Result holds the figures of one scenario: one run, or the medians of
// several (each figure its own median).
type Result struct {
	// Scenario is e.g. "batch-noop", "batch-work", "mixed", "roundtrip",
	// "ceiling", "scaling-small", "scaling-large" or "idle".
	Scenario string `json:"scenario"`
	// Jobs is how many jobs the scenario timed.
	Jobs int `json:"jobs"`
	// Backlog is the queue depth the scaling scenario drained from.
	Backlog int `json:"backlog,omitempty"`
	// Churned is how many jobs the scaling scenario claimed and completed
	// on the queue before it filled the backlog (Config.ScaleChurn).
	Churned int `json:"churned,omitempty"`
	// SpawnPerSec and DrainPerSec are throughputs in jobs per second.
	SpawnPerSec float64 `json:"spawn_per_sec,omitempty"`
	DrainPerSec float64 `json:"drain_per_sec,omitempty"`
	// ToStart and ToDone are latencies from the spawn call to the handler's
	// start and to the store's acknowledgement of the completion.
	ToStart Percentiles `json:"spawn_to_start"`
	ToDone  Percentiles `json:"spawn_to_done"`
	// CPUSeconds is the process's CPU time during the scenario; PeakRSSMiB
	// the process's peak resident set so far.
	CPUSeconds float64 `json:"cpu_seconds"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	// SpawnOfCeiling and DrainOfCeiling are the throughputs as fractions of
	// the raw ceiling measured in the same run.
	SpawnOfCeiling float64 `json:"spawn_of_ceiling,omitempty"`
	DrainOfCeiling float64 `json:"drain_of_ceiling,omitempty"`
	// DoneOfCeiling is the raw round trip's p50 divided by this p50.
	DoneOfCeiling float64 `json:"done_p50_of_ceiling,omitempty"`
	// CallsPerSec is the rate of backend calls, WirePerSec the rate of
	// commands or statements sent to the server (idle scenario).
	CallsPerSec   float64            `json:"backend_calls_per_sec,omitempty"`
	WirePerSec    float64            `json:"wire_per_sec,omitempty"`
	CallsByMethod map[string]float64 `json:"calls_per_sec_by_method,omitempty"`
	// CallsPerJob is how many backend calls of each method the runtime
	// made per job (batch, mixed and scaling scenarios): round trips per job.
	CallsPerJob map[string]float64 `json:"calls_per_job,omitempty"`
	// Problems lists what the self-check found; empty means every job ran
	// and completed exactly once and the backend's counts agree.
	Problems []string `json:"problems,omitempty"`
	// Runs is how many runs the figures are the medians of.
	Runs int `json:"runs"`
}

// medianResult merges runs of one scenario: each numeric figure becomes
// the median of its runs and problems are collected from every run.
func medianResult(runs []Result) Result {
	if len(runs) == 1 {
		r := runs[0]
		r.Runs = 1
		return r
	}
	out := runs[0]
	out.Runs = len(runs)
	out.Problems = nil
	for _, r := range runs {
		out.Problems = append(out.Problems, r.Problems...)
	}
	ov := reflect.ValueOf(&out).Elem()
	var medianFloats func(v reflect.Value, get func(Result) reflect.Value)
	medianFloats = func(v reflect.Value, get func(Result) reflect.Value) {
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			idx := i
			sub := func(r Result) reflect.Value { return get(r).Field(idx) }
			switch f.Kind() {
			case reflect.Float64:
				vals := make([]float64, len(runs))
				for j, r := range runs {
					vals[j] = sub(r).Float()
				}
				f.SetFloat(median(vals))
			case reflect.Struct:
				medianFloats(f, sub)
			}
		}
	}
	medianFloats(ov, func(r Result) reflect.Value { return reflect.ValueOf(r) })
	medianMap := func(get func(Result) map[string]float64) map[string]float64 {
		if get(out) == nil {
			return nil
		}
		m := map[string]float64{}
		for k := range get(out) {
			var vals []float64
			for _, r := range runs {
				vals = append(vals, get(r)[k])
			}
			m[k] = median(vals)
		}
		return m
	}
	out.CallsByMethod = medianMap(func(r Result) map[string]float64 { return r.CallsByMethod })
	out.CallsPerJob = medianMap(func(r Result) map[string]float64 { return r.CallsPerJob })
	out.Problems = slices.Compact(out.Problems)
	return out
}
