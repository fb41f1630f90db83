package natsq_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go"
)

// Environment of a worker process started by TestMultiProcessExactlyOnce.
const (
	envWorkerURL  = "BOSON_NATSQ_WORKER_URL"
	envWorkerNS   = "BOSON_NATSQ_WORKER_NS"
	envWorkerOut  = "BOSON_NATSQ_WORKER_OUT"
	envWorkerJobs = "BOSON_NATSQ_WORKER_JOBS"
)

func TestMain(m *testing.M) {
	if os.Getenv(envWorkerURL) != "" {
		if err := workerMain(); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// workerMain claims and completes jobs until the namespace holds the
// expected number of succeeded jobs, writing the id of every job whose
// completion it won to its output file.
func workerMain() error {
	total, _ := strconv.Atoi(os.Getenv(envWorkerJobs))
	nc, err := nats.Connect(os.Getenv(envWorkerURL), nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := natsq.New(ctx, nc, natsq.Options{Namespace: os.Getenv(envWorkerNS), PollInterval: 20 * time.Millisecond})
	if err != nil {
		return err
	}
	defer b.Close()
	f, err := os.Create(os.Getenv(envWorkerOut))
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	defer w.Flush()
	sig, stop := b.Subscribe("mp")
	defer stop()
	worker := fmt.Sprintf("pid-%d", os.Getpid())
	for {
		jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "mp", WorkerID: worker, Limit: 100, LeaseTTL: time.Minute})
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			n, err := b.CountJobs(ctx, core.JobFilter{Queue: "mp", States: []core.JobState{core.StateSucceeded}})
			if err != nil {
				return err
			}
			if n[core.StateSucceeded] >= int64(total) {
				return nil
			}
			select {
			case <-sig:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		items := make([]core.Completion, len(jobs))
		for i, j := range jobs {
			items[i] = core.Completion{Lease: j.Lease, Result: []byte(worker)}
		}
		errs, err := b.Complete(ctx, items)
		if err != nil {
			return err
		}
		for i, e := range errs {
			if e == nil {
				fmt.Fprintln(w, jobs[i].ID)
			}
		}
	}
}

// Worker processes sharing one server work 10,000 jobs: each is completed
// exactly once and none is lost.
func TestMultiProcessExactlyOnce(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { multiProcess(t, embeddedURL(t)) })
	t.Run("server", func(t *testing.T) { multiProcess(t, externalURL(t)) })
}

func multiProcess(t *testing.T, url string) {
	const total, procs = 10_000, 3
	nc := connect(t, url)
	ns := namespace("mp")
	b := newBackend(t, nc, natsq.Options{Namespace: ns})
	ctx := context.Background()
	want := map[string]bool{}
	for done := 0; done < total; done += 1000 {
		reqs := make([]core.EnqueueRequest, 1000)
		for i := range reqs {
			reqs[i] = core.EnqueueRequest{Queue: "mp", Task: "count", Payload: []byte(strconv.Itoa(done + i))}
		}
		res, err := b.Enqueue(ctx, reqs)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			want[r.Job.ID] = true
		}
	}
	dir := t.TempDir()
	cmds := make([]*exec.Cmd, procs)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envWorkerURL+"="+url, envWorkerNS+"="+ns,
			envWorkerOut+"="+filepath.Join(dir, fmt.Sprintf("w%d", i)), envWorkerJobs+"="+strconv.Itoa(total))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	seen := map[string]int{}
	perWorker := make([]int, procs)
	for i := range cmds {
		f, err := os.Open(filepath.Join(dir, fmt.Sprintf("w%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			seen[sc.Text()]++
			perWorker[i]++
		}
		f.Close()
	}
	for id, n := range seen {
		if n != 1 || !want[id] {
			t.Fatalf("job %s completed %d times (known: %v)", id, n, want[id])
		}
	}
	if len(seen) != total {
		t.Fatalf("%d of %d jobs completed", len(seen), total)
	}
	t.Logf("completions per worker: %v", perWorker)
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	n, _ := b.CountJobs(ctx, core.JobFilter{Queue: "mp"})
	if n[core.StateSucceeded] != total || len(n) != 1 {
		t.Fatalf("final counts %v", n)
	}
	st, _ := b.TaskStats(ctx, "count")
	if st.Runs[core.RunSucceeded] != total || len(st.Runs) != 1 {
		t.Fatalf("runs %v: a job ran more than once", st.Runs)
	}
}
