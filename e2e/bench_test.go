package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// BenchmarkThroughput measures spawn-to-completion throughput through the
// runtime on each backend: b.N jobs spawned in batches of 100 while one
// worker with 16 slots drains them (real clock).
func BenchmarkThroughput(b *testing.B) {
	for _, f := range backends {
		b.Run(f.Name, func(b *testing.B) {
			ctx := context.Background()
			be := f.New(b, core.SystemClock{})
			client, err := boson.NewClient(be, boson.ClientOptions{Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			w, err := boson.NewWorker(be, boson.WorkerOptions{Logger: quiet, Concurrency: 16, PollInterval: 50 * time.Millisecond,
				RescueInterval: -1, RetentionInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			if err := boson.Register(w, echoTask, echo); err != nil {
				b.Fatal(err)
			}
			if err := w.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = w.Shutdown(ctx) }()
			b.ResetTimer()
			for spawned := 0; spawned < b.N; {
				n := min(100, b.N-spawned)
				if _, err := boson.SpawnBatch(ctx, client, echoTask, make([]int, n)); err != nil {
					b.Fatal(err)
				}
				spawned += n
			}
			for {
				c, err := be.CountJobs(ctx, core.JobFilter{Task: "echo"})
				if err != nil {
					b.Fatal(err)
				}
				if c[core.StateSucceeded] >= int64(b.N) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}
