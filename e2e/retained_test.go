package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
	"github.com/nats-io/nats.go"
)

const envRetainedOut = "BOSON_E2E_RETAINED_OUT"

// retainedCounts are the finished and queued jobs BenchmarkRetainedNATS
// keeps; BOSON_RETAINED_FINISHED and BOSON_RETAINED_QUEUED override them.
func retainedCounts() (finished, queued int) {
	finished, queued = 1_000_000, 100_000
	if n, err := strconv.Atoi(os.Getenv("BOSON_RETAINED_FINISHED")); err == nil && n >= 0 {
		finished = n
	}
	if n, err := strconv.Atoi(os.Getenv("BOSON_RETAINED_QUEUED")); err == nil && n > 0 {
		queued = n
	}
	return finished, queued
}

// BenchmarkRetainedNATS measures what a namespace with many retained jobs
// costs a process that opens it: it fills a namespace of a private
// nats-server process with 1,000,000 succeeded and 100,000 queued jobs
// (enqueued, claimed and completed in batches of 10,000), then reports
//
//   - stats-s, stats-rss-MiB: wall time and peak RSS of `boson stats`;
//   - list-s, list-rss-MiB: the same for `boson jobs list`;
//   - first-claim-s, worker-rss-MiB: how long a new worker process takes
//     from its start to its first job, and its peak RSS once it runs.
//
// The server binary is found as for BenchmarkFleetNATS. It takes minutes
// and gigabytes on the current layout:
//
//	flock /tmp/boson-bench.lock go test -run '^$' -bench RetainedNATS -benchtime 1x -timeout 60m ./e2e
func BenchmarkRetainedNATS(b *testing.B) {
	bin := natsServerBinary(b)
	finished, queued := retainedCounts()
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	defer cancel()
	dir := b.TempDir()
	cli := filepath.Join(dir, "boson")
	if out, err := exec.Command("go", "build", "-o", cli, "github.com/boson-go/boson/cmd/boson").CombinedOutput(); err != nil {
		b.Fatalf("build the boson command: %v\n%s", err, out)
	}
	_, url, nc := startNATSProcess(b, bin, dir)
	ns := uniqueName("retained")
	fill := func() {
		p, err := natsq.New(ctx, nc, natsq.Options{Namespace: ns, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		const batch = 10_000
		enqueue := func(queue string, n int) {
			for sent := 0; sent < n; {
				k := min(batch, n-sent)
				reqs := make([]core.EnqueueRequest, k)
				for i := range reqs {
					reqs[i] = core.EnqueueRequest{Queue: queue, Task: fleetTask.Name(), Payload: []byte(strconv.Itoa(sent + i))}
				}
				if _, err := p.Enqueue(ctx, reqs); err != nil {
					b.Fatal(err)
				}
				sent += k
			}
		}
		enqueue("retained-done", finished)
		for done := 0; done < finished; {
			jobs, err := p.Claim(ctx, core.ClaimRequest{Queue: "retained-done", WorkerID: "filler", Limit: batch, LeaseTTL: time.Hour})
			if err != nil || len(jobs) == 0 {
				b.Fatalf("claim: %d jobs, %v", len(jobs), err)
			}
			items := make([]core.Completion, len(jobs))
			for i, j := range jobs {
				items[i] = core.Completion{Lease: j.Lease, Result: []byte(`0`)}
			}
			if _, err := p.Complete(ctx, items); err != nil {
				b.Fatal(err)
			}
			done += len(jobs)
		}
		enqueue("retained", queued)
	}
	fill()
	b.Logf("namespace %s: %d succeeded, %d queued", ns, finished, queued)
	b.ResetTimer()
	storeURL := url + "?namespace=" + ns
	for _, c := range []struct {
		name string
		args []string
	}{
		{"stats", []string{"stats", "--timeout", "30m", "--url", storeURL}},
		{"list", []string{"jobs", "--timeout", "30m", "--url", storeURL}},
	} {
		start := time.Now()
		cmd := exec.CommandContext(ctx, cli, c.args...)
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		rss, err := runWatched(cmd)
		if err != nil {
			b.Fatalf("boson %v: %v\n%s", c.args, err, buf.Bytes())
		}
		wall := time.Since(start)
		b.ReportMetric(wall.Seconds(), c.name+"-s")
		b.ReportMetric(rss, c.name+"-rss-MiB")
		b.Logf("boson %s: %v, %.0f MiB", c.name, wall.Round(time.Millisecond), rss)
	}
	out := filepath.Join(dir, "worker.json")
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRetainedWorkerChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envFleetURL+"="+url, envFleetNS+"="+ns, envRetainedOut+"="+out)
	cmd.Stderr = os.Stderr
	start := time.Now()
	rss, err := runWatched(cmd)
	if err != nil {
		b.Fatalf("worker: %v", err)
	}
	var r struct {
		FirstClaim time.Time `json:"first_claim"`
	}
	data, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(r.FirstClaim.Sub(start).Seconds(), "first-claim-s")
	b.ReportMetric(rss, "worker-rss-MiB")
	b.Logf("new worker: first job after %v, peak RSS %.0f MiB", r.FirstClaim.Sub(start).Round(time.Millisecond), rss)
}

// runWatched runs cmd and returns its peak resident set in MiB, read from
// /proc while it runs (VmHWM; the rusage of a child also counts the
// parent's pages it shared before exec).
func runWatched(cmd *exec.Cmd) (float64, error) {
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		if data, err := os.ReadFile(status); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
					if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil && kb > peak {
						peak = kb
					}
				}
			}
		}
		select {
		case err := <-done:
			return float64(peak) / 1024, err
		case <-t.C:
		}
	}
}

// TestRetainedWorkerChild is the new worker process of
// BenchmarkRetainedNATS: it opens the namespace, runs jobs of the queued
// queue for five seconds after its first one, writes the time of its
// first job and exits. It does nothing unless started by it.
func TestRetainedWorkerChild(t *testing.T) {
	url, out := os.Getenv(envFleetURL), os.Getenv(envRetainedOut)
	if url == "" || out == "" {
		return
	}
	ctx := context.Background()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	b, err := natsq.New(ctx, nc, natsq.Options{Namespace: os.Getenv(envFleetNS), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	first := make(chan time.Time, 1)
	w, err := boson.NewWorker(b, boson.WorkerOptions{ID: "retained-new", Queues: []string{"retained"}, Concurrency: 100, Logger: quiet,
		RetentionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := boson.Register(w, fleetTask, func(_ context.Context, n int) (int, error) {
		select {
		case first <- time.Now():
		default:
		}
		return n, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	at := <-first
	time.Sleep(5 * time.Second)
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(map[string]time.Time{"first_claim": at})
	if err := os.WriteFile(out, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
