package faults_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

var countTask = boson.NewTask[int, int]("count")

// drain spawns n more jobs on b and runs a worker until they are done, then
// shuts the worker down.
func drain(ctx context.Context, t *testing.T, b core.QueueBackend, n int) {
	t.Helper()
	c, err := boson.NewClient(b, boson.ClientOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	w, err := boson.NewWorker(b, boson.WorkerOptions{Queues: []string{"res"}, Concurrency: 10, Logger: quiet,
		PollInterval: 20 * time.Millisecond, RetentionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := boson.Register(w, countTask, func(_ context.Context, i int) (int, error) { return i + 1, nil }); err != nil {
		t.Fatal(err)
	}
	ins := make([]int, n)
	for i := range ins {
		ins[i] = i
	}
	if _, err := boson.SpawnBatch(ctx, c, countTask, ins, boson.WithQueue("res")); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		counts, err := b.CountJobs(ctx, core.JobFilter{Queue: "res"})
		if err != nil {
			t.Fatal(err)
		}
		if counts[core.StateQueued]+counts[core.StateRunning] == 0 && counts[core.StateSucceeded] > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("not drained: %v", counts)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// steady returns the number of goroutines once it has stopped changing
// for a few reads (or after a second).
func steady() int {
	last, same := runtime.NumGoroutine(), 0
	for i := 0; i < 50 && same < 3; i++ {
		time.Sleep(20 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
	}
	return last
}

// settle waits until the number of goroutines is at most want, and
// returns the last count.
func settle(want int) int {
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWorkerGoroutinesReturnToBaseline runs a worker on each backend and
// checks that its goroutines are gone after Shutdown: the count returns
// to what it was before the worker started (with the backend's own
// long-lived goroutines already running).
func TestWorkerGoroutinesReturnToBaseline(t *testing.T) {
	opens := map[string]func(t *testing.T) core.QueueBackend{
		"mem": func(t *testing.T) core.QueueBackend { return mem.New(mem.Options{Logger: quiet}) },
	}
	for _, s := range sharedStores() {
		opens[s.Name] = func(t *testing.T) core.QueueBackend { return s.Open(t, s.URL, s.Locator(t), true) }
	}
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			b := open(t)
			// A first worker starts what the backend keeps for its life
			// (a LISTEN connection, a watcher); the baseline is after it.
			drain(ctx, t, b, 10)
			opened := steady()
			drain(ctx, t, b, 200)
			if n := settle(opened); n > opened {
				buf := make([]byte, 1<<20)
				t.Errorf("after Shutdown %d goroutines, %d before the second worker:\n%s", n, opened, buf[:runtime.Stack(buf, true)])
			}
		})
	}
}

// TestConnectionsBoundedAndReused drains jobs through a proxy that counts
// connections: a worker with ten slots opens a bounded number of
// connections and reuses them, rather than one per job.
func TestConnectionsBoundedAndReused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, s := range sharedStores() {
		if !s.Networked {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			answering(t, s.Name, s.URL)
			p := startProxy(t, hostOf(s.URL))
			locator := s.Locator(t)
			_ = s.Open(t, s.URL, locator, true) // creates the schema or namespace
			b := s.Open(t, withHost(s.URL, p.Addr()), locator, false)
			const jobs = 500
			drain(ctx, t, b, jobs)
			t.Logf("%s: %d jobs, %d connections accepted, at most %d open at once", s.Name, jobs, p.accepted.Load(), p.peak.Load())
			if p.accepted.Load() > 20 || p.peak.Load() > 20 {
				t.Errorf("%d connections accepted, %d at once, for %d jobs", p.accepted.Load(), p.peak.Load(), jobs)
			}
		})
	}
}

// BenchmarkPeakRSSDrainMillion measures the peak resident memory of a
// worker draining 1,000,000 jobs, fed and cleaned in waves so the store
// holds at most one wave, on mem (BOSON_FAULTS_RSS=sqlite: on a SQLite
// file; BOSON_FAULTS_RSS_JOBS changes the count). The peak is the
// process's, so run one store per process, once:
//
//	go test -run '^$' -bench PeakRSS -benchtime 1x ./faults
//
// It prints the figures and reports the peak as peak-RSS-MiB.
func BenchmarkPeakRSSDrainMillion(bm *testing.B) {
	kind := os.Getenv("BOSON_FAULTS_RSS")
	ctx := context.Background()
	var b core.QueueBackend
	switch kind {
	case "", "mem":
		kind, b = "mem", mem.New(mem.Options{Logger: quiet})
	case "sqlite":
		s := sqliteStore()
		b = s.Open(bm, "", s.Locator(bm), true)
	default:
		bm.Fatalf("BOSON_FAULTS_RSS=%q: want mem or sqlite", kind)
	}
	defer b.Close()
	total := 1_000_000
	if n, err := strconv.Atoi(os.Getenv("BOSON_FAULTS_RSS_JOBS")); err == nil && n > 0 {
		total = n
	}
	c, err := boson.NewClient(b, boson.ClientOptions{Logger: quiet})
	if err != nil {
		bm.Fatal(err)
	}
	w, err := boson.NewWorker(b, boson.WorkerOptions{Queues: []string{"rss"}, Concurrency: 10, Logger: quiet,
		PollInterval: 5 * time.Millisecond, RetentionInterval: -1})
	if err != nil {
		bm.Fatal(err)
	}
	if err := boson.Register(w, countTask, func(_ context.Context, i int) (int, error) { return i + 1, nil }); err != nil {
		bm.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		bm.Fatal(err)
	}
	defer func() { _ = w.Shutdown(ctx) }()
	const wave = 10_000
	ins := make([]int, wave)
	done := int64(0)
	for spawned := 0; spawned < total; spawned += wave {
		if _, err := boson.SpawnBatch(ctx, c, countTask, ins, boson.WithQueue("rss")); err != nil {
			bm.Fatal(err)
		}
		for {
			counts, _ := b.CountJobs(ctx, core.JobFilter{Queue: "rss"})
			if counts[core.StateSucceeded] == wave {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if _, err := b.Cleanup(ctx, core.CleanupRequest{Queue: "rss", FinishedBefore: time.Now().Add(time.Hour), Limit: wave}); err != nil {
			bm.Fatal(err)
		}
		done += wave
		if done%100_000 == 0 {
			fmt.Printf("rss drained=%d rss=%s peak=%s\n", done, procStatus("VmRSS"), procStatus("VmHWM"))
		}
	}
	fmt.Printf("rss %s: drained %d jobs, peak RSS %s\n", kind, done, procStatus("VmHWM"))
	if kb, err := strconv.Atoi(procStatusKB("VmHWM")); err == nil {
		bm.ReportMetric(float64(kb)/1024, "peak-RSS-MiB")
	}
}

// procStatus returns a field of /proc/self/status, such as "VmHWM" (peak
// resident set), in MiB.
func procStatus(field string) string {
	kb, err := strconv.Atoi(procStatusKB(field))
	if err != nil {
		return "?"
	}
	return fmt.Sprintf("%.1f MiB", float64(kb)/1024)
}

// procStatusKB returns the kilobytes of a field of /proc/self/status, or "".
func procStatusKB(field string) string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field+":") {
			if f := strings.Fields(l); len(f) > 1 {
				return f[1]
			}
		}
	}
	return ""
}
