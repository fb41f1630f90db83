package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// BatchFigures are one run of the batch comparison: spawn N jobs in
// batches, then drain them with no-op handlers, in jobs per second.
type BatchFigures struct {
	Spawn float64 `json:"spawn_per_sec"`
	Drain float64 `json:"drain_per_sec"`
	// DrainDefaults is boson's drain with WorkerOptions{} (boson only).
	DrainDefaults float64 `json:"drain_defaults_per_sec,omitempty"`
}

// spawnAll sends n jobs through send in calls of batch jobs from spawners
// goroutines and returns the time it took.
func spawnAll(ctx context.Context, n, batch, spawners int, send func(ctx context.Context, first, k int) error) (time.Duration, error) {
	var next atomic.Int64
	errs := make(chan error, spawners)
	start := time.Now()
	for range spawners {
		go func() {
			for {
				first := int(next.Add(int64(batch))) - batch
				if first >= n || ctx.Err() != nil {
					errs <- ctx.Err()
					return
				}
				if err := send(ctx, first, min(batch, n-first)); err != nil {
					next.Store(int64(n))
					errs <- err
					return
				}
			}
		}()
	}
	var all []error
	for range spawners {
		all = append(all, <-errs)
	}
	return time.Since(start), errors.Join(all...)
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// suffix is a short random name part for fresh schemas, queues, files and
// streams.
func suffix() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// moduleVersion is the version of a dependency built into this program.
func moduleVersion(path string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == path {
				if m.Replace != nil {
					return m.Replace.Version
				}
				return m.Version
			}
		}
	}
	return "(unknown version)"
}
