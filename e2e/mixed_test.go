package e2e_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// mixedTask sleeps for its input's milliseconds.
var mixedTask = boson.NewTask[int, int]("mixed")

// TestMixedDurationsDefaults runs short (1 ms) and long (10 s) handlers
// under the default worker options, on the process clock with a short
// lease (5 s, renewed every 1.7 s, rescued every 2.5 s) on
// the memory backend and SQLite. The long jobs, one in every 300, are as
// many as the slots a worker starts with: they would fill ten fixed slots
// long before the short ones were done. With the default slots every
// short job finishes before the first long one, and every job runs exactly
// once, on its first attempt, with no lease lost.
func TestMixedDurationsDefaults(t *testing.T) {
	const (
		jobs      = 3000
		longEvery = 300
		long      = 10 * time.Second
	)
	for _, f := range backends {
		if f.Name != "mem" && f.Name != "sqlite" {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			b := f.New(t, core.SystemClock{})
			client, err := boson.NewClient(b, boson.ClientOptions{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			w, err := boson.NewWorker(b, boson.WorkerOptions{Logger: quiet, LeaseTTL: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu         sync.Mutex
				runs       = map[string]int{}
				shortEnd   time.Time // the last short handler's end
				firstLong  time.Time // the first long handler's start
				longRunErr error
			)
			if err := boson.Register(w, mixedTask, func(ctx context.Context, ms int) (int, error) {
				info, _ := boson.Info(ctx)
				start := time.Now()
				mu.Lock()
				runs[info.JobID]++
				if ms >= int(long/time.Millisecond) && (firstLong.IsZero() || start.Before(firstLong)) {
					firstLong = start
				}
				mu.Unlock()
				select {
				case <-time.After(time.Duration(ms) * time.Millisecond):
				case <-ctx.Done():
					mu.Lock()
					longRunErr = context.Cause(ctx)
					mu.Unlock()
					return 0, ctx.Err()
				}
				if ms < int(long/time.Millisecond) {
					mu.Lock()
					if now := time.Now(); now.After(shortEnd) {
						shortEnd = now
					}
					mu.Unlock()
				}
				return ms, nil
			}); err != nil {
				t.Fatal(err)
			}
			ins := make([]int, jobs)
			for i := range ins {
				ins[i] = 1
				if i%longEvery == 0 {
					ins[i] = int(long / time.Millisecond)
				}
			}
			hs, err := boson.SpawnBatch(ctx, client, mixedTask, ins)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = w.Shutdown(context.Background()) }()
			for _, h := range hs {
				if _, err := h.Wait(ctx); err != nil {
					t.Fatalf("job %s: %v", h.ID(), err)
				}
			}
			if err := w.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if longRunErr != nil {
				t.Fatalf("a handler was cancelled: %v", longRunErr)
			}
			if !shortEnd.Before(firstLong.Add(long)) {
				t.Errorf("the last short job ended %v after the first long one began, want under %v", shortEnd.Sub(firstLong), long)
			}
			for _, h := range hs {
				j, err := b.GetJob(ctx, h.ID())
				if err != nil {
					t.Fatal(err)
				}
				if j.State != core.StateSucceeded || j.Attempt != 1 || runs[j.ID] != 1 {
					t.Fatalf("job %s: state %s, attempt %d, ran %d times; want succeeded once on its first attempt", j.ID, j.State, j.Attempt, runs[j.ID])
				}
			}
			if m := w.Metrics().Total; m.LeaseLost != 0 || m.Completed != jobs {
				t.Errorf("metrics: %d leases lost, %d completed; want 0 and %d", m.LeaseLost, m.Completed, jobs)
			}
		})
	}
}
