package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// WriteSVG draws the reports as one self-contained SVG chart: per backend,
// horizontal bars of batch spawn, drain (no-op and working handler, and with
// Config.Defaults the no-op drain of WorkerOptions{}) and the
// raw ceiling in jobs per second, then the single round trip's p50, both
// on log scales, with the targets marked.
func WriteSVG(w io.Writer, reports []*Report) error {
	const (
		width   = 960
		left    = 210.0
		right   = 900.0
		rowH    = 15.0
		gap     = 12.0
		top     = 60.0
		palette = "#4e79a7,#59a14f,#9c755f,#bab0ac,#76b7b2"
	)
	colors := strings.Split(palette, ",")
	type bar struct {
		label string
		get   func(*Report) float64
	}
	series := []bar{
		{"batch spawn", func(r *Report) float64 { return fig(r, "batch-noop").SpawnPerSec }},
		{"drain, no-op", func(r *Report) float64 { return fig(r, "batch-noop").DrainPerSec }},
		{"drain, 1 ms handler", func(r *Report) float64 { return fig(r, "batch-work").DrainPerSec }},
		{"raw ceiling: claim+complete", func(r *Report) float64 { return fig(r, "ceiling").DrainPerSec }},
	}
	// With --defaults, the drain of a worker made from WorkerOptions{}.
	for _, r := range reports {
		if fig(r, "batch-noop-defaults").DrainPerSec > 0 {
			defaults := bar{"drain, no-op, WorkerOptions{}", func(r *Report) float64 { return fig(r, "batch-noop-defaults").DrainPerSec }}
			series = append(series[:2:2], append([]bar{defaults}, series[2:]...)...)
			break
		}
	}
	legendGap := 950.0 / float64(len(series)+1)
	var b strings.Builder
	y := top
	lo, hi := 2.0, 7.0 // 100 to 10M jobs/s
	xOf := func(v, lo, hi float64) float64 {
		if v <= 0 {
			return left
		}
		f := (math.Log10(v) - lo) / (hi - lo)
		return left + math.Max(0, math.Min(1, f))*(right-left)
	}
	axis := func(y0, y1, lo, hi float64, unit func(float64) string) {
		for e := lo; e <= hi; e++ {
			x := xOf(math.Pow(10, e), lo, hi)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, y0, x, y1)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" class="tick">%s</text>`+"\n", x, y1+12, unit(math.Pow(10, e)))
		}
	}
	fmt.Fprintf(&b, `<text x="%d" y="24" class="title">boson bench — throughput (jobs/s, log scale) and single round trip p50</text>`+"\n", 10)
	for i, s := range series {
		fmt.Fprintf(&b, `<rect x="%.0f" y="34" width="10" height="10" fill="%s"/><text x="%.0f" y="43" class="legend">%s</text>`+"\n", 10+float64(i)*legendGap, colors[i], 24+float64(i)*legendGap, s.label)
	}
	tx := 10 + float64(len(series))*legendGap
	fmt.Fprintf(&b, `<line x1="%.0f" y1="34" x2="%.0f" y2="44" stroke="#e15759" stroke-width="2"/><text x="%.0f" y="43" class="legend">target</text>`+"\n", tx, tx, tx+6)
	y0 := y
	for _, r := range reports {
		t, hasT := Targets[r.Kind]
		fmt.Fprintf(&b, `<text x="10" y="%.1f" class="group">%s</text>`+"\n", y+rowH*2, html.EscapeString(r.Kind))
		for i, s := range series {
			v := s.get(r)
			x := xOf(v, lo, hi)
			fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end" class="label">%s</text>`+"\n", left-6, y+rowH-4, s.label)
			fmt.Fprintf(&b, `<rect x="%.0f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", left, y+1, x-left, rowH-2, colors[i])
			if v > 0 {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="value">%s</text>`+"\n", x+4, y+rowH-4, human(v))
			}
			if hasT && (i == 0 || i == 1) {
				tv := t.SpawnPerSec
				if i == 1 {
					tv = t.DrainPerSec
				}
				tx := xOf(tv, lo, hi)
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e15759" stroke-width="2"/>`+"\n", tx, y, tx, y+rowH)
			}
			y += rowH
		}
		y += gap
	}
	axis(y0-4, y, lo, hi, tickLabel)
	y += 40
	// Round trip panel: microseconds, 10 µs to 100 ms.
	fmt.Fprintf(&b, `<text x="10" y="%.1f" class="title">single job round trip, spawn to done, p50 (log scale)</text>`+"\n", y-12)
	rlo, rhi := 1.0, 5.0
	y1 := y
	for _, r := range reports {
		v := fig(r, "roundtrip").ToDone.P50
		x := xOf(v, rlo, rhi)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end" class="label">%s</text>`+"\n", left-6, y+rowH-4, html.EscapeString(r.Kind))
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", left, y+1, x-left, rowH-2, colors[0])
		if v > 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="value">%s</text>`+"\n", x+4, y+rowH-4, micros(v))
		}
		if t, ok := Targets[r.Kind]; ok {
			tx := xOf(t.RoundTripP50us, rlo, rhi)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e15759" stroke-width="2"/>`+"\n", tx, y, tx, y+rowH)
		}
		y += rowH + 4
	}
	axis(y1-4, y, rlo, rhi, micros)
	y += 40
	// CPU panel: the process's CPU time per job of the no-op batch (spawn
	// and drain), which a busy machine disturbs far less than the rates.
	fmt.Fprintf(&b, `<text x="10" y="%.1f" class="title">process CPU per job, batch spawn + drain, no-op (log scale; lower is better)</text>`+"\n", y-12)
	clo, chi := 0.0, 4.0
	y2 := y
	for _, r := range reports {
		res := fig(r, "batch-noop")
		v := 0.0
		if res.Jobs > 0 {
			v = res.CPUSeconds * 1e6 / float64(res.Jobs)
		}
		x := xOf(v, clo, chi)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end" class="label">%s</text>`+"\n", left-6, y+rowH-4, html.EscapeString(r.Kind))
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", left, y+1, x-left, rowH-2, colors[2])
		if v > 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="value">%.0f µs</text>`+"\n", x+4, y+rowH-4, v)
		}
		y += rowH + 4
	}
	axis(y2-4, y, clo, chi, micros)
	y += 30
	if len(reports) > 0 {
		m := reports[0].Machine
		fmt.Fprintf(&b, `<text x="10" y="%.1f" class="tick">%s — %d CPUs, %s. Medians of %d runs; N=%d, W=%d; load average %s.</text>`+"\n",
			y, html.EscapeString(m.CPU), m.CPUs, m.Go, reports[0].Config.Runs, reports[0].Config.Jobs, reports[0].Config.Concurrency, html.EscapeString(reports[0].LoadStart))
		y += 14
		fmt.Fprintf(&b, `<text x="10" y="%.1f" class="tick">A throughput bar short of its red mark, or a round-trip bar past it, misses the target.</text>`+"\n", y)
		y += 10
	}
	_, err := fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f" font-family="sans-serif">
<style>.title{font-size:14px;font-weight:bold}.legend,.label{font-size:11px}.group{font-size:13px;font-weight:bold}.value{font-size:10px}.tick{font-size:10px;fill:#555}</style>
<rect width="100%%" height="100%%" fill="white"/>
%s</svg>
`, width, y+10, width, y+10, b.String())
	return err
}

// fig returns the median result of a scenario, or a zero Result.
func fig(r *Report, scenario string) Result {
	for _, res := range r.Results {
		if res.Scenario == scenario {
			return res
		}
	}
	return Result{}
}

// tickLabel names a power of ten: 100, 1k, 10k, 100k, 1M, 10M.
func tickLabel(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.0fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.0fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}
