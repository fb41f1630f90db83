package admin

import (
	"fmt"
	"strings"
	"time"
)

// chartView is a queue's activity laid out for the page's inline SVG: one
// stacked bar a minute (completed, failed, retried) and a depth line.
type chartView struct {
	Queue         string
	Width, Height int
	// Top, TicksY, DepthLabelY, DepthTop, DepthHeight and FullHeight lay
	// out the two panels.
	Top, TicksY, DepthLabelY, DepthTop, DepthHeight, FullHeight int
	FromLabel, ToLabel                                          string
	Bars                                                        []chartBar
	// Max is the tallest bar's total, the top of the scale.
	Max int64
	// DepthPoints is the depth line's SVG points; DepthMax its scale.
	DepthPoints string
	DepthMax    int64
	Depth       []depthView
	From, To    time.Time
	Totals      minuteView
}

// chartBar is one minute's bar. Y and H are in SVG units.
type chartBar struct {
	minuteView
	Label                  string
	X, W                   float64
	YC, HC, YF, HF, YR, HR float64
	Total                  int64
}

const (
	chartW = 640
	chartH = 150
	depthH = 60
)

func newChart(a activityView) chartView {
	c := chartView{Queue: a.Queue, Width: chartW, Height: chartH, From: a.From, To: a.To, Depth: a.Depth,
		Top: 18, DepthHeight: depthH, FromLabel: a.From.UTC().Format("15:04"), ToLabel: a.To.UTC().Format("15:04")}
	c.TicksY = c.Top + chartH + 14
	c.DepthLabelY = c.TicksY + 20
	c.DepthTop = c.DepthLabelY + 6
	c.FullHeight = c.DepthTop + depthH + 4
	for _, m := range a.Minutes {
		c.Max = max(c.Max, m.Completed+m.Failed+m.Retried)
		c.Totals.Completed += m.Completed
		c.Totals.Failed += m.Failed
		c.Totals.Retried += m.Retried
	}
	scale := 1.0
	if c.Max > 0 {
		scale = float64(chartH) / float64(c.Max)
	}
	w := float64(chartW) / float64(max(len(a.Minutes), 1))
	for i, m := range a.Minutes {
		b := chartBar{minuteView: m, Label: m.Start.UTC().Format("15:04"), X: float64(i) * w, W: w * 0.8, Total: m.Completed + m.Failed + m.Retried}
		y := float64(chartH)
		b.HC = float64(m.Completed) * scale
		y -= b.HC
		b.YC = y
		b.HF = float64(m.Failed) * scale
		y -= b.HF
		b.YF = y
		b.HR = float64(m.Retried) * scale
		y -= b.HR
		b.YR = y
		c.Bars = append(c.Bars, b)
	}
	for _, d := range a.Depth {
		c.DepthMax = max(c.DepthMax, d.Jobs)
	}
	span := a.To.Sub(a.From).Seconds()
	var pts []string
	for _, d := range a.Depth {
		x := float64(chartW) * d.At.Sub(a.From).Seconds() / max(span, 1)
		y := float64(depthH)
		if c.DepthMax > 0 {
			y -= float64(depthH) * float64(d.Jobs) / float64(c.DepthMax)
		}
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
	}
	c.DepthPoints = strings.Join(pts, " ")
	return c
}
