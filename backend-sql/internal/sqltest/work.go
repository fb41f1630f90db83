package sqltest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// Environment of a worker process started by RunWorkers.
const (
	EnvWorker = "BOSON_SQL_TEST_WORKER"
	EnvTarget = "BOSON_SQL_TEST_TARGET"
	// EnvBarrier is a directory: a worker writes ready-NAME there once
	// its store is open and starts when the file "go" appears.
	EnvBarrier = "BOSON_SQL_TEST_BARRIER"
)

// Drain claims and completes jobs of queue in batches until no job of
// the queue is queued, running or sleeping, and returns how many it
// completed. It is the body of one worker process. Like a real worker it
// tries again after a failed call (up to 20 failures in a row).
func Drain(ctx context.Context, b core.QueueBackend, queue, worker string, batch int) (int, error) {
	sig, stop, _ := core.SubscribeQueue(b, queue)
	defer stop()
	done, failures := 0, 0
	const maxFailures = 20
	for {
		jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: queue, WorkerID: worker, Limit: batch, LeaseTTL: 5 * time.Minute})
		if err != nil {
			if failures++; failures > maxFailures {
				return done, fmt.Errorf("claim: %w", err)
			}
			continue
		}
		failures = 0
		if len(jobs) == 0 {
			n, err := b.CountJobs(ctx, core.JobFilter{Queue: queue, States: []core.JobState{core.StateQueued, core.StateRunning, core.StateSleeping}})
			if err != nil {
				return done, fmt.Errorf("count: %w", err)
			}
			if n[core.StateQueued]+n[core.StateRunning]+n[core.StateSleeping] == 0 {
				return done, nil
			}
			// Other workers still hold jobs: wait for a signal or a tick.
			select {
			case <-sig:
			case <-time.After(20 * time.Millisecond):
			case <-ctx.Done():
				return done, ctx.Err()
			}
			continue
		}
		items := make([]core.Completion, len(jobs))
		for i, j := range jobs {
			items[i] = core.Completion{Lease: j.Lease, Result: []byte(worker)}
		}
		// A failed call changed nothing (its transaction rolled back) or
		// everything; either way the same leases complete it now.
		errs, err := b.Complete(ctx, items)
		for err != nil {
			if failures++; failures > maxFailures {
				return done, fmt.Errorf("complete: %w", err)
			}
			errs, err = b.Complete(ctx, items)
		}
		failures = 0
		for i, e := range errs {
			if e != nil {
				return done, fmt.Errorf("complete %s: %w", items[i].Lease.JobID, e)
			}
		}
		done += len(jobs)
	}
}

// RunWorkers starts n copies of the test binary as worker processes (the
// package's TestMain must call the worker when EnvWorker is set), hands
// each target in EnvTarget, waits for all and fails t if one fails. It
// returns the sum of the counts they print on their last line.
func RunWorkers(t *testing.T, n int, target string) int {
	t.Helper()
	barrier := t.TempDir()
	var wg sync.WaitGroup
	outs := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), EnvWorker+"="+fmt.Sprintf("w%d", i), EnvTarget+"="+target, EnvBarrier+"="+barrier)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = cmd.Wait()
			outs[i] = out.String()
		}()
	}
	// Start the work only when every worker has opened the store, so
	// that all of them compete for the jobs.
	waitFiles(barrier, n, func() bool {
		for i := range n {
			if errs[i] != nil {
				return true
			}
		}
		return false
	})
	if err := os.WriteFile(filepath.Join(barrier, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	total := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("worker %d: %v\n%s", i, errs[i], outs[i])
		}
		lines := strings.Split(strings.TrimSpace(outs[i]), "\n")
		var c int
		if _, err := fmt.Sscanf(lines[len(lines)-1], "completed %d", &c); err != nil {
			t.Fatalf("worker %d printed no count: %q", i, outs[i])
		}
		t.Logf("worker %d completed %d jobs", i, c)
		total += c
	}
	return total
}

// waitFiles waits until dir holds n files named ready-*, or stop says so.
func waitFiles(dir string, n int, stop func() bool) {
	for !stop() {
		m, _ := filepath.Glob(filepath.Join(dir, "ready-*"))
		if len(m) >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WorkerMain runs one worker process on the backend open returns, prints
// "completed N" and returns the exit code.
func WorkerMain(open func(ctx context.Context, target string) (core.QueueBackend, error), queue string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := open(ctx, os.Getenv(EnvTarget))
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	defer b.Close()
	if dir := os.Getenv(EnvBarrier); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "ready-"+os.Getenv(EnvWorker)), nil, 0o644); err != nil {
			fmt.Println("barrier:", err)
			return 1
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
				break
			}
			if ctx.Err() != nil {
				fmt.Println("barrier:", ctx.Err())
				return 1
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	n, err := Drain(ctx, b, queue, os.Getenv(EnvWorker), 100)
	if err != nil {
		fmt.Println("drain:", err)
		return 1
	}
	fmt.Printf("completed %d\n", n)
	return 0
}

// Jobs returns n enqueue requests of queue.
func Jobs(queue string, n int) []core.EnqueueRequest {
	reqs := make([]core.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = core.EnqueueRequest{Queue: queue, Task: "work", Payload: []byte(fmt.Sprintf(`{"n":%d}`, i))}
	}
	return reqs
}

// EnqueueAll stores reqs in batches of 1,000.
func EnqueueAll(t testing.TB, b core.QueueBackend, reqs []core.EnqueueRequest) {
	t.Helper()
	for start := 0; start < len(reqs); start += 1000 {
		if _, err := b.Enqueue(context.Background(), reqs[start:min(start+1000, len(reqs))]); err != nil {
			t.Fatal(err)
		}
	}
}
