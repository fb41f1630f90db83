package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable writes rep as aligned text tables: the figures, the idle
// calls, and the verdicts against the targets.
func WriteTable(w io.Writer, rep *Report) error {
	fmt.Fprintf(w, "backend %s (%s) — %d CPUs, %s, %s; medians of %d run(s)\n",
		rep.Kind, rep.Location, rep.Machine.CPUs, rep.Machine.CPU, rep.Machine.Go, rep.Config.Runs)
	if rep.LoadStart != "" {
		fmt.Fprintf(w, "load average at start %s, at end %s\n", rep.LoadStart, rep.LoadEnd)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tjobs\tspawn/s\tdrain/s\tstart p50\tp90\tp99\tdone p50\tp90\tp99\tcpu s\tcpu µs/job\trss MiB\tspawn/ceil\tdrain/ceil\tcheck\t")
	for _, r := range rep.Results {
		if r.Scenario == "idle" {
			continue
		}
		jobs, check := jobsCell(r), checkCell(r, "FAILED")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%.0f\t%s\t%s\t%s\t\n",
			r.Scenario, jobs, rateCell(r.SpawnPerSec), rateCell(r.DrainPerSec),
			latCell(r.ToStart.P50, r.ToStart.N), latCell(r.ToStart.P90, r.ToStart.N), latCell(r.ToStart.P99, r.ToStart.N),
			latCell(r.ToDone.P50, r.ToDone.N), latCell(r.ToDone.P90, r.ToDone.N), latCell(r.ToDone.P99, r.ToDone.N),
			r.CPUSeconds, cpuPerJob(r), r.PeakRSSMiB, fracCell(r.SpawnOfCeiling), fracCell(r.DrainOfCeiling), check)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rep.Results {
		if r.Scenario != "idle" {
			continue
		}
		fmt.Fprintf(w, "idle worker: %.2f backend calls/s", r.CallsPerSec)
		if r.WirePerSec > 0 {
			fmt.Fprintf(w, ", %.2f commands/s sent to the server", r.WirePerSec)
		}
		fmt.Fprintf(w, " (%s); cpu %.3fs\n", perMethod(r.CallsByMethod, 2), r.CPUSeconds)
	}
	for _, r := range rep.Results {
		if len(r.CallsPerJob) == 0 {
			continue
		}
		fmt.Fprintf(w, "backend calls per job, %s: %s\n", r.Scenario, perMethod(r.CallsPerJob, 3))
	}
	for _, run := range rep.Soak {
		fmt.Fprintf(w, "%s: %s jobs/s offered for %v, sampled every %v\n", run.Title(), human(float64(run.Rate)),
			time.Duration(run.Duration*1e9), time.Duration(run.Interval*1e9))
		for _, s := range run.Samples {
			fmt.Fprintf(w, "  at %6s  %s\n", time.Duration(s.End*1e9).Round(time.Second), sampleLine(s))
		}
	}
	for _, r := range rep.Results {
		for _, p := range r.Problems {
			fmt.Fprintf(w, "CHECK FAILED %s: %s\n", r.Scenario, p)
		}
	}
	if len(rep.Verdicts) > 0 {
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "target\twant\tgot\tmet\t")
		for _, v := range rep.Verdicts {
			met := "yes"
			if !v.Met {
				met = "NO"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", v.Goal, v.Want, v.Got, met)
		}
		return tw.Flush()
	}
	return nil
}

func rateCell(v float64) string {
	if v == 0 {
		return "-"
	}
	return human(v)
}

func latCell(us float64, n int) string {
	if n == 0 {
		return "-"
	}
	return micros(us)
}

func fracCell(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", v*100)
}

// cpuPerJob is the process's CPU time per job: spawn and drain together for
// the batch scenarios. It depends far less on a busy machine than rates do.
func cpuPerJob(r Result) string {
	if r.Jobs == 0 || r.CPUSeconds == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", r.CPUSeconds*1e6/float64(r.Jobs))
}

// jobsCell is how many jobs a scenario timed, and from what backlog.
func jobsCell(r Result) string {
	if r.Backlog > 0 && r.Churned > 0 {
		return fmt.Sprintf("%d of %d, after %d finished", r.Jobs, r.Backlog, r.Churned)
	}
	if r.Backlog > 0 {
		return fmt.Sprintf("%d of %d", r.Jobs, r.Backlog)
	}
	return fmt.Sprint(r.Jobs)
}

// checkCell is the self-check's verdict: "ok", else failed.
func checkCell(r Result, failed string) string {
	if len(r.Problems) > 0 {
		return failed
	}
	return "ok"
}

// perMethod lists counts by backend method, sorted by method, as
// "Claim 0.020, Complete 0.019" with digits decimals.
func perMethod(m map[string]float64, digits int) string {
	var by []string
	for _, k := range sortedKeys(m) {
		by = append(by, fmt.Sprintf("%s %.*f", k, digits, m[k]))
	}
	return strings.Join(by, ", ")
}
