package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
	"github.com/nats-io/nats.go"
)

// skewedClock is a process clock that runs off true time by a fixed offset,
// as on a host whose clock is wrong.
type skewedClock struct{ off time.Duration }

func (c skewedClock) Now() time.Time { return time.Now().Add(c.off).UTC() }

var skewWork = boson.NewTask[int, int]("skew-work")

// TestClockSkewNATS runs three worker processes on one NATS namespace, one
// with its clock an hour ahead, one an hour behind and one true, each
// handing its clock to its backend (Options.Clock, the process clock) and
// to its runtime worker, as a process on a wrong host would. Every lease,
// due time, deadline and rate window must follow the server's time:
//
//   - no live lease is rescued: jobs that outlive their lease TTL by
//     heartbeats are never lost, although the worker ahead calls Rescue
//     every 100 ms;
//   - no delayed job starts before its run-at (by true time);
//   - no deadline fires: every job has a MaxDuration and the delayed ones
//     a MaxDelay, both far longer than the run, which the clocks an hour
//     off would have passed;
//   - no rate window opens: with the task's one-second window full, the
//     processes an hour ahead and behind are refused too;
//   - the worker behind is not starved: every worker runs jobs.
//
// When the backend decided by its process clock, as the command-log
// design did, this run rescued live leases, started delayed jobs early,
// let the skewed processes enqueue past the rate limit and starved the
// worker behind.
func TestClockSkewNATS(t *testing.T) {
	url := os.Getenv("BOSON_TEST_NATS_URL")
	if url == "" {
		url = "nats://127.0.0.1:4222"
	}
	requireService(t, "nats", strings.TrimPrefix(url, "nats://"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := uniqueName("skew")
	open := func(off time.Duration) *natsq.Backend {
		nc, err := nats.Connect(url, nats.MaxReconnects(-1))
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		b, err := natsq.New(ctx, nc, natsq.Options{Namespace: ns, Clock: skewedClock{off}, Logger: quiet, PollInterval: 100 * time.Millisecond})
		if err != nil {
			nc.Close()
			t.Fatalf("natsq.New: %v", err)
		}
		t.Cleanup(func() { _ = b.Close(); nc.Close() })
		return b
	}
	producer := open(0)
	t.Cleanup(func() {
		nc, err := nats.Connect(url)
		if err == nil {
			_ = natsq.DeleteNamespace(context.Background(), nc, ns)
			nc.Close()
		}
	})
	offsets := []time.Duration{time.Hour, -time.Hour, 0}
	procs := make([]*natsq.Backend, len(offsets))
	for i, off := range offsets {
		procs[i] = open(off)
	}

	// The rate window: fill it from the true process, then ask the
	// skewed ones, all within one second of true time.
	if err := producer.PutTaskConfig(ctx, core.TaskConfig{Task: "limited", MaxEnqueuePerSecond: 5}); err != nil {
		t.Fatal(err)
	}
	for try := 0; ; try++ {
		start := time.Now()
		reqs := make([]core.EnqueueRequest, 5)
		for i := range reqs {
			reqs[i] = core.EnqueueRequest{Queue: "skew-limited", Task: "limited"}
		}
		if _, err := producer.Enqueue(ctx, reqs); err != nil {
			if errors.Is(err, core.ErrRateLimited) && try < 5 {
				time.Sleep(1100 * time.Millisecond)
				continue
			}
			t.Fatalf("filling the window: %v", err)
		}
		var opened []string
		for i, p := range procs[:2] {
			if _, err := p.Enqueue(ctx, []core.EnqueueRequest{{Queue: "skew-limited", Task: "limited"}}); err == nil {
				opened = append(opened, fmt.Sprint(offsets[i]))
			} else if !errors.Is(err, core.ErrRateLimited) {
				t.Fatalf("enqueue past the limit: %v", err)
			}
		}
		if time.Since(start) > 700*time.Millisecond {
			if try < 5 {
				time.Sleep(1100 * time.Millisecond)
				continue // too slow to tell; the window may have moved on
			}
			t.Fatal("could not fill a rate window within a second")
		}
		if len(opened) > 0 {
			t.Fatalf("processes with clocks %v off enqueued past a full one-second window", opened)
		}
		break
	}

	// The work: 400 jobs due now, 30 of them outliving their lease TTL by
	// heartbeats, and 100 delayed ones.
	const immediate, delayed, long = 400, 100, 30
	runAt := time.Now().Add(4 * time.Second).UTC()
	var reqs []core.EnqueueRequest
	for i := range immediate + delayed {
		r := core.EnqueueRequest{Queue: "skew", Task: skewWork.Name(), Payload: []byte(fmt.Sprint(i)),
			Cancel: core.CancellationPolicy{MaxDuration: 2 * time.Minute}}
		if i >= immediate {
			r.RunAt = runAt
			r.Cancel.MaxDelay = 2 * time.Minute
		}
		reqs = append(reqs, r)
	}
	res, err := producer.Enqueue(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	delayedIDs := map[string]bool{}
	for _, r := range res[immediate:] {
		delayedIDs[r.Job.ID] = true
	}

	var mu sync.Mutex
	started := map[string]time.Time{}
	runs := map[string]int{}
	byWorker := map[string]int{}
	var workers []*boson.Worker
	for i, p := range procs {
		id := fmt.Sprintf("skew-%v", offsets[i])
		w, err := boson.NewWorker(p, boson.WorkerOptions{
			ID: id, Queues: []string{"skew"}, Concurrency: 40, Clock: skewedClock{offsets[i]}, Logger: quiet,
			LeaseTTL: 3 * time.Second, HeartbeatInterval: 500 * time.Millisecond, PollInterval: 50 * time.Millisecond,
			RescueInterval: 100 * time.Millisecond, RetentionInterval: -1, ShutdownGrace: 10 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		err = boson.Register(w, skewWork, func(ctx context.Context, n int) (int, error) {
			info, _ := boson.Info(ctx)
			mu.Lock()
			if _, ok := started[info.JobID]; !ok {
				started[info.JobID] = time.Now()
			}
			runs[info.JobID]++
			byWorker[info.WorkerID]++
			mu.Unlock()
			d := 5 * time.Millisecond
			if n < long {
				d = 7500 * time.Millisecond // two and a half lease TTLs
			}
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return 0, ctx.Err()
			}
			return n, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		workers = append(workers, w)
	}
	defer func() {
		for _, w := range workers {
			_ = w.Shutdown(context.Background())
		}
	}()

	for {
		counts, err := producer.CountJobs(ctx, core.JobFilter{Queue: "skew"})
		if err != nil {
			t.Fatal(err)
		}
		done := counts[core.StateSucceeded] + counts[core.StateFailed] + counts[core.StateCancelled]
		if done == immediate+delayed {
			if counts[core.StateSucceeded] != immediate+delayed {
				t.Fatalf("final counts %v: every job should have succeeded (a cancelled job means a deadline fired)", counts)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("jobs did not finish: %v", counts)
		}
		time.Sleep(100 * time.Millisecond)
	}

	stats, err := producer.TaskStats(ctx, skewWork.Name())
	if err != nil {
		t.Fatal(err)
	}
	if n := stats.Runs[core.RunLost]; n > 0 {
		t.Errorf("%d live leases were rescued (runs lost)", n)
	}
	if n := stats.Runs[core.RunCancelled]; n > 0 {
		t.Errorf("%d runs were cancelled by a deadline", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, n := range runs {
		if n != 1 {
			t.Errorf("job %s ran %d times", id, n)
		}
	}
	early := 0
	for id := range delayedIDs {
		if started[id].Before(runAt) {
			early++
		}
		j, err := producer.GetJob(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.FirstStartedAt.Before(runAt) {
			t.Errorf("delayed job %s first started at %v, before its run-at %v", id, j.FirstStartedAt, runAt)
		}
	}
	if early > 0 {
		t.Errorf("%d of %d delayed jobs started before their run-at", early, delayed)
	}
	for i := range offsets {
		if id := fmt.Sprintf("skew-%v", offsets[i]); byWorker[id] == 0 {
			t.Errorf("worker %s ran no job", id)
		}
	}
	t.Logf("jobs per worker: %v", byWorker)
}
