package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/boson-go/boson/cmd/soak"
)

// Report is the outcome of one sitting.
type Report struct {
	Started   time.Time      `json:"started"`
	Seconds   float64        `json:"seconds"`
	Machine   string         `json:"machine"`
	LoadStart string         `json:"load_start"`
	LoadEnd   string         `json:"load_end"`
	Args      []string       `json:"args"`
	Jobs      int            `json:"jobs"`
	Runs      int            `json:"runs"`
	Boson     []soak.Setting `json:"boson_settings"`
	Stores    []*StoreReport `json:"stores"`
	// Steady holds the steady loads, boson's and River's, in the order run.
	Steady []*soak.Run `json:"steady,omitempty"`
}

// StoreReport is the batch comparison on one store: every run of each side.
type StoreReport struct {
	Store        string         `json:"store"`
	Peer         string         `json:"peer"`
	PeerSettings []soak.Setting `json:"peer_settings"`
	Boson        []BatchFigures `json:"boson"`
	PeerRuns     []BatchFigures `json:"peer_runs"`
}

// Ratio is a paired comparison: each side's median and the median of the
// per-run ratios boson/peer.
type Ratio struct {
	Boson, Peer, Ratio float64
}

// compare pairs the i-th run of each side.
func compare(a, b []BatchFigures, getA, getB func(BatchFigures) float64) Ratio {
	var av, bv, rv []float64
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := getA(a[i]), getB(b[i])
		av, bv = append(av, x), append(bv, y)
		if y > 0 {
			rv = append(rv, x/y)
		}
	}
	return Ratio{Boson: median(av), Peer: median(bv), Ratio: median(rv)}
}

func spawnOf(f BatchFigures) float64    { return f.Spawn }
func drainOf(f BatchFigures) float64    { return f.Drain }
func defaultsOf(f BatchFigures) float64 { return f.DrainDefaults }

// WriteMarkdown writes the report: the batch table, the settings of every
// side, each run's figures, and the steady load beside River's.
func WriteMarkdown(w io.Writer, rep *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### boson beside its peers\n\n%s. Started %s, %.0f s; load average (1, 5, 15 min) %s at the start, %s at the end. `peers %s`.\n\n",
		rep.Machine, rep.Started.Format(time.RFC3339), rep.Seconds, rep.LoadStart, rep.LoadEnd, strings.Join(rep.Args, " "))
	if len(rep.Stores) > 0 {
		fmt.Fprintf(&b, "Batch: N = %d no-op jobs per run, %d alternating runs per store with fresh state; medians, and the median of the paired per-run ratios boson/peer.\n\n", rep.Jobs, rep.Runs)
		b.WriteString("| store | peer | batch spawn: boson / peer (ratio) | batch drain, tuned: boson / peer (ratio) | batch drain, WorkerOptions{}: boson / peer (ratio) |\n|---|---|---|---|---|\n")
		for _, s := range rep.Stores {
			sp := compare(s.Boson, s.PeerRuns, spawnOf, spawnOf)
			dr := compare(s.Boson, s.PeerRuns, drainOf, drainOf)
			df := compare(s.Boson, s.PeerRuns, defaultsOf, drainOf)
			fmt.Fprintf(&b, "| %s | %s | %s / %s (**%.2f×**) | %s / %s (**%.2f×**) | %s / %s (**%.2f×**) |\n", s.Store, s.Peer,
				human(sp.Boson), human(sp.Peer), sp.Ratio, human(dr.Boson), human(dr.Peer), dr.Ratio, human(df.Boson), human(df.Peer), df.Ratio)
		}
		fmt.Fprintf(&b, "\nboson: %s.\n", settingsText(rep.Boson))
		for _, s := range rep.Stores {
			fmt.Fprintf(&b, "%s (%s): %s.\n", s.Peer, s.Store, settingsText(s.PeerSettings))
		}
		b.WriteString("\nEvery run (jobs/s; boson: spawn, drain tuned, drain WorkerOptions{}; peer: spawn, drain):\n\n")
		for _, s := range rep.Stores {
			var bs, ps []string
			for _, f := range s.Boson {
				bs = append(bs, fmt.Sprintf("%s/%s/%s", human(f.Spawn), human(f.Drain), human(f.DrainDefaults)))
			}
			for _, f := range s.PeerRuns {
				ps = append(ps, fmt.Sprintf("%s/%s", human(f.Spawn), human(f.Drain)))
			}
			fmt.Fprintf(&b, "- %s: boson %s; %s %s\n", s.Store, strings.Join(bs, ", "), s.Peer, strings.Join(ps, ", "))
		}
		b.WriteString("\n")
	}
	if len(rep.Steady) > 0 {
		writeSteady(&b, rep.Steady)
	}
	_, err := io.WriteString(w, b.String())
	if err == nil && len(rep.Steady) > 0 {
		err = soak.WriteMarkdown(w, rep.Steady)
	}
	return err
}

// writeSteady tables the steady loads side by side, and the ratios of
// boson's medians to River's under each setting.
func writeSteady(b *strings.Builder, runs []*soak.Run) {
	r0 := runs[0]
	fmt.Fprintf(b, "Steady load on PostgreSQL: %d jobs/s offered for %v in batches of %d, retention on; spawn-to-start from each store's own timestamps (boson: created_at to first start of the claimed row; River: created_at to attempted_at of the completed row).\n\n",
		r0.Rate, time.Duration(r0.Duration*1e9), r0.Batch)
	b.WriteString("| load | system | offered/s | drained/s | last-window drain/s | spawn→start p50 | p90 | p99 | largest backlog | peak dead tuples | check |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		s := r.Summary
		load := "plain"
		if r.Held {
			load = "xmin held"
		}
		check := "ok"
		if len(r.Problems) > 0 {
			check = "**" + strings.Join(r.Problems, "; ") + "**"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %d | %d | %s |\n", load, r.System, human(s.Offered), human(s.Drained),
			human(s.LastDrained), soak.FormatMs(s.P50), soak.FormatMs(s.P90), soak.FormatMs(s.P99), s.MaxBacklog, s.PeakDead, check)
	}
	b.WriteString("\n")
	for _, held := range []bool{false, true} {
		var bo, ri []*soak.Run
		for _, r := range runs {
			if r.Held != held {
				continue
			}
			if r.System == "boson" {
				bo = append(bo, r)
			} else {
				ri = append(ri, r)
			}
		}
		if len(bo) == 0 || len(ri) == 0 {
			continue
		}
		med := func(rs []*soak.Run, f func(soak.Summary) float64) float64 {
			var v []float64
			for _, r := range rs {
				v = append(v, f(r.Summary))
			}
			return median(v)
		}
		load := "without a held transaction"
		if held {
			load = "with the xmin horizon held"
		}
		dr := func(s soak.Summary) float64 { return s.Drained }
		p50 := func(s soak.Summary) float64 { return s.P50 }
		p99 := func(s soak.Summary) float64 { return s.P99 }
		fmt.Fprintf(b, "Steady load %s, boson / %s (medians of %d and %d runs): drain %.2f×, spawn→start p50 %.2f×, p99 %.2f× (below 1 is faster for latency).\n\n",
			load, ri[0].System, len(bo), len(ri), ratio(med(bo, dr), med(ri, dr)), ratio(med(bo, p50), med(ri, p50)), ratio(med(bo, p99), med(ri, p99)))
	}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func median(v []float64) float64 { return soak.Median(v) }

func human(v float64) string { return soak.FormatRate(v) }

func settingsText(s []soak.Setting) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = x.Name + " " + x.Value
	}
	return strings.Join(parts, "; ")
}

// machine describes the host: CPUs, model, Go.
func machine() string {
	return fmt.Sprintf("%d CPUs (%s), %s %s/%s", runtime.NumCPU(), soak.CPUModel(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
