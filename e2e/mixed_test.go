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

// TestMixedDurationsDefaults runs short (1 ms) and long handlers under the
// default worker options, on the process clock with a short lease (8 s,
// renewed every 2.7 s, rescued every 4 s) on the memory backend and
// SQLite. The long jobs, one in every 300, are as many as the slots a
// worker starts with: they would fill ten fixed slots long before the
// short ones were done, and no short job could finish while all of them
// ran. A long handler runs 10 s, and on until every long one has started
// and 2 s more (at most 45 s, several lease periods either way), so that
// however slowly a loaded machine reaches the last long job, they all run
// at once. With
// the default slots short jobs keep finishing while every long job runs,
// and every job runs exactly once, on its first attempt, with no lease
// lost. The check counts jobs, not seconds.
func TestMixedDurationsDefaults(t *testing.T) {
	const (
		jobs      = 3000
		longEvery = 300
		long      = 10 * time.Second // the shortest a long handler runs
		longMax   = 45 * time.Second // the longest a long handler waits for the others
		longAfter = 2 * time.Second  // how long it runs on once every long one runs
	)
	for _, f := range backends {
		if f.Name != "mem" && f.Name != "sqlite" {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			b := f.New(t, core.SystemClock{})
			client, err := boson.NewClient(b, boson.ClientOptions{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			w, err := boson.NewWorker(b, boson.WorkerOptions{Logger: quiet, LeaseTTL: 8 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu         sync.Mutex
				runs       = map[string]int{}
				longNow    int  // long handlers running now
				allLong    bool // every long handler runs at once
				shortWhile int  // short handlers that ended while every long one ran
				longRunErr error
				allLongNow = make(chan struct{}) // closed once every long handler runs
			)
			if err := boson.Register(w, mixedTask, func(ctx context.Context, ms int) (int, error) {
				info, _ := boson.Info(ctx)
				isLong := ms >= int(long/time.Millisecond)
				mu.Lock()
				runs[info.JobID]++
				if isLong {
					longNow++
					if !allLong && longNow == jobs/longEvery {
						allLong = true
						close(allLongNow)
					}
				}
				mu.Unlock()
				d := time.Duration(ms) * time.Millisecond
				if isLong {
					began := time.Now()
					select {
					case <-allLongNow:
						d = max(longAfter, long-time.Since(began))
					case <-time.After(longMax):
						d = 0
					case <-ctx.Done(): // d stays long: the select below ends the handler
					}
				}
				select {
				case <-time.After(d):
				case <-ctx.Done():
					mu.Lock()
					longRunErr = context.Cause(ctx)
					mu.Unlock()
					return 0, ctx.Err()
				}
				mu.Lock()
				if isLong {
					longNow--
				} else if longNow == jobs/longEvery {
					shortWhile++
				}
				mu.Unlock()
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
			if !allLong {
				t.Errorf("the %d long jobs never ran at once: the default slots did not grow past them", jobs/longEvery)
			} else if shortWhile == 0 {
				t.Error("no short job finished while every long one ran: short jobs waited behind long ones")
			}
			t.Logf("%d short jobs finished while all %d long ones ran", shortWhile, jobs/longEvery)
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
