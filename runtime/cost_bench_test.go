//go:build unix

package boson_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	boson "github.com/boson-go/boson/runtime"
)

type costIn struct {
	Seq int `json:"seq"`
}

var costTask = boson.NewTask[costIn, struct{}]("cost")

// spawnCost enqueues n jobs of costTask in batches of 1,000.
func spawnCost(b *testing.B, c *boson.Client, n int) {
	b.Helper()
	reqs := make([]boson.Request, 0, 1000)
	for lo := 0; lo < n; lo += 1000 {
		reqs = reqs[:0]
		for i := lo; i < min(lo+1000, n); i++ {
			reqs = append(reqs, costTask.Request(costIn{Seq: i}))
		}
		if _, err := c.SpawnRequests(context.Background(), reqs...); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuClock measures the process's CPU time (user and system) over a
// benchmark, reported per op as cpu-ns/op: on a shared machine it moves
// far less than the wall time.
type cpuClock struct {
	b     *testing.B
	start time.Duration
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU(b *testing.B) *cpuClock { return &cpuClock{b: b, start: processCPU(b)} }

func (c *cpuClock) stop() {
	c.b.ReportMetric(float64(processCPU(c.b)-c.start)/float64(c.b.N), "cpu-ns/op")
}

// BenchmarkSpawnBatch measures the runtime's cost per job of a batch
// spawn on the memory backend: one op is one job.
func BenchmarkSpawnBatch(b *testing.B) {
	be := mem.New(mem.Options{Logger: quiet})
	defer func() { _ = be.Close() }()
	c, err := boson.NewClient(be, boson.ClientOptions{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b)
	spawnCost(b, c, b.N)
	cpu.stop()
}

// BenchmarkDrain measures the cost per job of draining a backlog of
// no-op jobs on the memory backend through a worker: one op is one job,
// from claim to the written completion.
func BenchmarkDrain(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts boson.WorkerOptions
	}{
		{"w100", boson.WorkerOptions{Concurrency: 100}},
		{"defaults", boson.WorkerOptions{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			be := mem.New(mem.Options{Logger: quiet})
			defer func() { _ = be.Close() }()
			c, err := boson.NewClient(be, boson.ClientOptions{Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			spawnCost(b, c, b.N)
			opts := bc.opts
			opts.Logger, opts.RescueInterval, opts.RetentionInterval = quiet, -1, -1
			w, err := boson.NewWorker(be, opts)
			if err != nil {
				b.Fatal(err)
			}
			if err := boson.Register(w, costTask, func(context.Context, costIn) (struct{}, error) {
				return struct{}{}, nil
			}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := startCPU(b)
			if err := w.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			for w.Metrics().Total.Completed < int64(b.N) {
				time.Sleep(200 * time.Microsecond)
			}
			b.StopTimer()
			cpu.stop()
			_ = w.Shutdown(context.Background())
		})
	}
}
