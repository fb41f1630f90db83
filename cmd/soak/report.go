package soak

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"
)

// Title names a run: system, store and whether the horizon was held.
func (r *Run) Title() string {
	t := r.System + " on " + r.Store
	if r.Held {
		t += ", xmin held"
	}
	return t
}

// WriteMarkdown writes each run as a Markdown section: its settings, one
// row per interval, its summary and its verdicts.
func WriteMarkdown(w io.Writer, runs []*Run) error {
	var b strings.Builder
	for _, r := range runs {
		fmt.Fprintf(&b, "#### %s\n\n", r.Title())
		fmt.Fprintf(&b, "%s jobs/s offered for %v in batches of %d, sampled every %v.", rateText(float64(r.Rate)),
			secs(r.Duration), r.Batch, secs(r.Interval))
		if len(r.Options) > 0 {
			fmt.Fprintf(&b, " Settings: %s.", settingsText(r.Options))
		}
		if len(r.Server) > 0 {
			fmt.Fprintf(&b, " Server: %s. The schema's tables were rewritten (VACUUM FULL) before the load.", settingsText(r.Server))
		}
		if r.Xmin != "" {
			fmt.Fprintf(&b, " A REPEATABLE READ transaction held xmin %s from before the first spawn to after the last job finished.", r.Xmin)
		}
		b.WriteString("\n\n")
		pg := len(r.Samples) > 0 && r.Samples[0].Tables != nil
		b.WriteString("| at | offered/s | drained/s | backlog | starts | spawn→start p50 | p99 |")
		if pg {
			b.WriteString(" table | indexes | dead tuples | autovacuums | oldest xmin age |")
		}
		b.WriteString("\n|---|---|---|---|---|---|---|")
		if pg {
			b.WriteString("---|---|---|---|---|")
		}
		b.WriteString("\n")
		for _, s := range r.Samples {
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %s | %s |", secs(s.End), rateText(s.Offered), rateText(s.Drained), s.Backlog, s.Starts, msText(s.StartP50), msText(s.StartP99))
			if t := s.Tables; pg && t != nil {
				fmt.Fprintf(&b, " %s | %s | %d | %d | %d |", bytesText(t.TableBytes), bytesText(t.IndexBytes), t.DeadTuples, t.Autovacuums, t.XminAge)
			} else if pg {
				b.WriteString(" - | - | - | - | - |")
			}
			b.WriteString("\n")
		}
		s := r.Summary
		fmt.Fprintf(&b, "\nWhole load: offered %s/s, drained %s/s, spawn→start p50 %s, p99 %s, largest backlog %d; %d jobs spawned, %d finished, backlog drained %.1f s after the load.\n\n",
			rateText(s.Offered), rateText(s.Drained), msText(s.P50), msText(s.P99), s.MaxBacklog, r.Spawned, r.Done, r.Tail)
		if v := r.Verdicts(); len(v) > 0 {
			b.WriteString("| goal | want | got | met |\n|---|---|---|---|\n")
			for _, x := range v {
				met := "yes"
				if !x.Met {
					met = "**no**"
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", x.Goal, mdCell(x.Want), mdCell(x.Got), met)
			}
			b.WriteString("\n")
		}
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "Problem: %s\n\n", p)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteSVG draws the runs as one self-contained SVG chart of four panels
// over time: drain rate (offered dashed), p50 and p99 spawn-to-start on a
// log scale, table plus index size, and dead tuples; one color per run.
func WriteSVG(w io.Writer, runs []*Run) error {
	const (
		width  = 960.0
		left   = 80.0
		right  = 760.0
		panelH = 150.0
		gapH   = 60.0
		top    = 70.0
	)
	colors := []string{"#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#76b7b2", "#b07aa1", "#9c755f", "#edc948"}
	var b strings.Builder
	fmt.Fprintf(&b, `<text x="10" y="24" class="title">steady load: drain, spawn-to-start, table size and dead tuples over time</text>`+"\n")
	xMax := 0.0
	for _, r := range runs {
		for _, s := range r.Samples {
			xMax = math.Max(xMax, s.End)
		}
	}
	if xMax == 0 {
		xMax = 1
	}
	xOf := func(t float64) float64 { return left + t/xMax*(right-left) }
	for i, r := range runs {
		c := colors[i%len(colors)]
		y := 40.0 + float64(i%4)*14
		x := 10 + float64(i/4)*420
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-width="3"/><text x="%.0f" y="%.0f" class="legend">%s</text>`+"\n",
			x, y-4, x+18, y-4, c, x+24, y, html.EscapeString(r.Title()))
	}
	legendRows := math.Min(4, float64(len(runs)))
	y0 := top + legendRows*14
	type panel struct {
		title string
		log   bool
		get   func(s Sample) (float64, bool)
		unit  func(float64) string
		extra func(s Sample) (float64, bool) // drawn dashed
	}
	table := func(f func(t *Tables) float64) func(s Sample) (float64, bool) {
		return func(s Sample) (float64, bool) {
			if s.Tables == nil {
				return 0, false
			}
			return f(s.Tables), true
		}
	}
	panels := []panel{
		{title: "drained jobs/s (dashed: offered)", get: func(s Sample) (float64, bool) { return s.Drained, true },
			extra: func(s Sample) (float64, bool) { return s.Offered, true }, unit: rateText},
		{title: "spawn-to-start p99, ms, log scale (dashed: p50)", log: true, get: func(s Sample) (float64, bool) { return s.StartP99, s.Starts > 0 },
			extra: func(s Sample) (float64, bool) { return s.StartP50, s.Starts > 0 }, unit: msText},
		{title: "table + index size (PostgreSQL)", get: table(func(t *Tables) float64 { return float64(t.TableBytes + t.IndexBytes) }),
			unit: func(v float64) string { return bytesText(int64(v)) }},
		{title: "dead tuples (PostgreSQL)", get: table(func(t *Tables) float64 { return float64(t.DeadTuples) }),
			unit: func(v float64) string { return rateText(v) }},
	}
	for pi, p := range panels {
		py := y0 + float64(pi)*(panelH+gapH)
		lo, hi := math.Inf(1), 0.0
		for _, r := range runs {
			for _, s := range r.Samples {
				for _, get := range []func(Sample) (float64, bool){p.get, p.extra} {
					if get == nil {
						continue
					}
					if v, ok := get(s); ok && (!p.log || v > 0) {
						lo, hi = math.Min(lo, v), math.Max(hi, v)
					}
				}
			}
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" class="group">%s</text>`+"\n", left, py-8, html.EscapeString(p.title))
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.1f" width="%.0f" height="%.0f" fill="none" stroke="#ccc"/>`+"\n", left, py, right-left, panelH)
		if hi == 0 {
			fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" class="tick">no data</text>`+"\n", left+10, py+panelH/2)
			continue
		}
		yOf := func(v float64) float64 { return py + panelH - v/(hi*1.1)*panelH }
		ticks := []float64{0, hi * 1.1 / 2, hi * 1.1}
		if p.log {
			l0, l1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
			if l1 == l0 {
				l1++
			}
			yOf = func(v float64) float64 {
				if v <= 0 {
					return py + panelH
				}
				return py + panelH - (math.Log10(v)-l0)/(l1-l0)*panelH
			}
			ticks = nil
			for e := l0; e <= l1; e++ {
				ticks = append(ticks, math.Pow(10, e))
			}
		}
		for _, t := range ticks {
			fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#eee"/><text x="%.0f" y="%.1f" text-anchor="end" class="tick">%s</text>`+"\n",
				left, yOf(t), right, yOf(t), left-4, yOf(t)+3, p.unit(t))
		}
		for i, r := range runs {
			c := colors[i%len(colors)]
			for k, get := range []func(Sample) (float64, bool){p.get, p.extra} {
				if get == nil {
					continue
				}
				var pts []string
				for _, s := range r.Samples {
					if v, ok := get(s); ok {
						pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(s.End), yOf(v)))
					}
				}
				if len(pts) == 0 {
					continue
				}
				dash := ""
				if k == 1 {
					dash = ` stroke-dasharray="4 3"`
				}
				fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), c, dash)
			}
		}
		for _, f := range []float64{0, 0.5, 1} {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" class="tick">%s</text>`+"\n", xOf(f*xMax), py+panelH+12, secs(f*xMax))
		}
	}
	h := y0 + float64(len(panels))*(panelH+gapH)
	if len(runs) > 0 {
		r := runs[0]
		fmt.Fprintf(&b, `<text x="10" y="%.1f" class="tick">%s jobs/s offered for %v in batches of %d; each point is one %v interval; time since the load began.</text>`+"\n",
			h-20, rateText(float64(r.Rate)), secs(r.Duration), r.Batch, secs(r.Interval))
	}
	_, err := fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif">
<style>.title{font-size:14px;font-weight:bold}.legend{font-size:11px}.group{font-size:12px;font-weight:bold}.tick{font-size:10px;fill:#555}</style>
<rect width="100%%" height="100%%" fill="white"/>
%s</svg>
`, width, h, width, h, b.String())
	return err
}

func settingsText(s []Setting) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = x.Name + "=" + x.Value
	}
	return strings.Join(parts, ", ")
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, ">=", "≥", "<=", "≤").Replace(s)
}

func secs(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Second)
}

func rateText(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.2fk", v/1e3)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

// FormatMs formats milliseconds as µs, ms or s with three digits or so.
func FormatMs(ms float64) string { return msText(ms) }

func msText(ms float64) string {
	switch {
	case ms == 0:
		return "-"
	case ms >= 10_000:
		return fmt.Sprintf("%.1f s", ms/1000)
	case ms >= 100:
		return fmt.Sprintf("%.0f ms", ms)
	case ms >= 1:
		return fmt.Sprintf("%.1f ms", ms)
	default:
		return fmt.Sprintf("%.0f µs", ms*1000)
	}
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%d KiB", n>>10)
	}
}
