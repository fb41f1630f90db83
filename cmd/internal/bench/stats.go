package bench

import (
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/boson-go/boson/cmd/soak"
)

// Percentiles are latency percentiles in microseconds.
type Percentiles struct {
	P50 float64 `json:"p50_us"`
	P90 float64 `json:"p90_us"`
	P99 float64 `json:"p99_us"`
	N   int     `json:"n"`
}

func percentiles(d []time.Duration) Percentiles {
	if len(d) == 0 {
		return Percentiles{}
	}
	slices.Sort(d)
	at := func(q float64) float64 {
		i := int(q*float64(len(d)-1) + 0.5)
		return float64(d[i]) / float64(time.Microsecond)
	}
	return Percentiles{P50: at(0.50), P90: at(0.90), P99: at(0.99), N: len(d)}
}

func median(v []float64) float64 { return soak.Median(v) }

// usage is the process's CPU time and peak resident set so far.
type usage struct {
	cpu     time.Duration
	peakRSS int64 // bytes
}

func readUsage() usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return usage{}
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return usage{cpu: cpu, peakRSS: int64(ru.Maxrss) * 1024} // Maxrss is KiB on Linux
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func itoa(n int) string { return strconv.Itoa(n) }

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return itoa(n) + " " + what + "s"
}
