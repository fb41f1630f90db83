package soak

import (
	"io"
	"os"
	"slices"
	"strings"
)

// The helpers below are shared by "boson bench" and the peer comparison,
// so that both print and summarize figures alike.

// FormatRate formats a rate with a k or M suffix: 950, 1.25k, 12.5k, 1.20M.
func FormatRate(v float64) string { return rateText(v) }

// FormatBar draws frac (clamped to [0, 1]) as a bar of width cells between
// brackets, "=" for the done part: FormatBar(0.5, 4) is "[==  ]". A width
// below 1 gives "[]".
func FormatBar(frac float64, width int) string {
	width = max(width, 0)
	fill := int(min(max(frac, 0), 1) * float64(width))
	return "[" + strings.Repeat("=", fill) + strings.Repeat(" ", width-fill) + "]"
}

// Median returns the median of v (the mean of the middle two for an even
// count), 0 for none; v is not reordered.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// LoadAvg returns the machine's 1, 5 and 15 minute load averages as
// /proc/loadavg gives them, or "" where there is none.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// CPUModel returns the first CPU's model name from /proc/cpuinfo, or "".
func CPUModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// WriteFile creates path and fills it with write; the first error wins.
func WriteFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
