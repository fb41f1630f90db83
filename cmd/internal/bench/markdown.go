package bench

import (
	"fmt"
	"io"
	"strings"

	"github.com/boson-go/boson/cmd/soak"
)

// WriteMarkdown writes rep as Markdown: the verdicts against the targets,
// one row per scenario, and the backend calls per job, in the shape of
// docs/benchmarks.md.
func WriteMarkdown(w io.Writer, rep *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", rep.Kind)
	fmt.Fprintf(&b, "%d CPUs (%s), %s. Medians of %d run(s).", rep.Machine.CPUs, rep.Machine.CPU, rep.Machine.Go, rep.Config.Runs)
	if rep.LoadStart != "" {
		fmt.Fprintf(&b, " Load average (1, 5, 15 min) %s at the start, %s at the end.", rep.LoadStart, rep.LoadEnd)
	}
	b.WriteString("\n\n")
	if len(rep.Verdicts) > 0 {
		b.WriteString("| target | want | measured (median) | met |\n|---|---|---|---|\n")
		for _, v := range rep.Verdicts {
			met := "yes"
			if !v.Met {
				met = "**no**"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", v.Goal, mdEscape(v.Want), mdEscape(v.Got), met)
		}
		b.WriteString("\n")
	}
	b.WriteString("| scenario | jobs | spawn/s | drain/s | spawn→start p50 / p90 / p99 | spawn→done p50 / p90 / p99 | CPU s | CPU µs/job | peak RSS MiB | spawn / drain of ceiling | check |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		if r.Scenario == "idle" {
			continue
		}
		jobs, check := jobsCell(r), checkCell(r, "**FAILED**")
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s / %s / %s | %s / %s / %s | %.2f | %s | %.0f | %s / %s | %s |\n",
			r.Scenario, jobs, rateCell(r.SpawnPerSec), rateCell(r.DrainPerSec),
			latCell(r.ToStart.P50, r.ToStart.N), latCell(r.ToStart.P90, r.ToStart.N), latCell(r.ToStart.P99, r.ToStart.N),
			latCell(r.ToDone.P50, r.ToDone.N), latCell(r.ToDone.P90, r.ToDone.N), latCell(r.ToDone.P99, r.ToDone.N),
			r.CPUSeconds, cpuPerJob(r), r.PeakRSSMiB, fracCell(r.SpawnOfCeiling), fracCell(r.DrainOfCeiling), check)
	}
	b.WriteString("\n")
	var calls []string
	for _, r := range rep.Results {
		if len(r.CallsPerJob) == 0 {
			continue
		}
		calls = append(calls, fmt.Sprintf("%s: %s", r.Scenario, perMethod(r.CallsPerJob, 3)))
	}
	if len(calls) > 0 {
		fmt.Fprintf(&b, "Backend calls per job — %s.\n\n", strings.Join(calls, "; "))
	}
	for _, r := range rep.Results {
		if r.Scenario != "idle" {
			continue
		}
		fmt.Fprintf(&b, "Idle worker: %.2f backend calls/s", r.CallsPerSec)
		if r.WirePerSec > 0 {
			fmt.Fprintf(&b, ", %.2f commands/s sent to the server", r.WirePerSec)
		}
		b.WriteString(".\n\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	return soak.WriteMarkdown(w, rep.Soak)
}

// mdEscape keeps a cell from breaking a Markdown table.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, ">=", "≥", "<=", "≤").Replace(s)
}
