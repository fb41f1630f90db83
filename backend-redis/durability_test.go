package redisq

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boson-go/boson/conformance/testenv/testreq"
	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// TestDurabilityRestart enqueues and works jobs against a private
// redis-server with appendonly yes and appendfsync always, restarts it
// twice mid-run (a clean SIGTERM and a SIGKILL crash), and checks that
// every job whose enqueue was acknowledged is still there and gets done.
func TestDurabilityRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	requireServerBinary(t, testreq.RedisServer)
	srv, err := startServer(t.TempDir(), "--appendonly", "yes", "--appendfsync", "always")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	client := redis.NewClient(&redis.Options{Addr: srv.addr(), MaxRetries: 1, DialTimeout: time.Second})
	t.Cleanup(func() { client.Close() })
	clock := core.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	b := newBackend(t, client, Options{Clock: clock})
	ctx := context.Background()

	const total, batch = 3000, 20
	var (
		mu       sync.Mutex
		acked    = map[string]string{} // idempotency key -> job id
		errCount int
	)
	noteErr := func(err error) {
		if !strings.HasPrefix(err.Error(), "redisq: ") {
			t.Errorf("error not wrapped by the backend: %v", err)
		}
		if errors.Is(err, core.ErrInvalidArgument) || errors.Is(err, core.ErrIdempotencyConflict) {
			t.Errorf("unexpected error kind: %v", err)
		}
		mu.Lock()
		errCount++
		mu.Unlock()
	}
	halfway := make(chan struct{})
	progress := make(chan struct{}, 1)
	producerDone := make(chan struct{})
	go func() {
		defer close(producerDone)
		for n := 0; n < total; {
			reqs := make([]core.EnqueueRequest, batch)
			for i := range reqs {
				k := "k" + strconv.Itoa(n+i)
				reqs[i] = core.EnqueueRequest{Queue: "d", Task: "t", Payload: []byte(k), IdempotencyKey: k}
			}
			res, err := b.Enqueue(ctx, reqs)
			if err != nil {
				noteErr(err) // not acknowledged: try the same keys again
				time.Sleep(5 * time.Millisecond)
				continue
			}
			mu.Lock()
			for i, r := range res {
				acked[reqs[i].IdempotencyKey] = r.Job.ID
			}
			mu.Unlock()
			select {
			case progress <- struct{}{}:
			default:
			}
			n += batch
			if n == total/2 {
				close(halfway)
			}
		}
	}()
	stopWork := make(chan struct{})
	workDone := make(chan struct{})
	go func() {
		defer close(workDone)
		for {
			select {
			case <-stopWork:
				return
			default:
			}
			jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "d", WorkerID: "w", Limit: 10, LeaseTTL: time.Minute})
			if err != nil {
				noteErr(err)
				time.Sleep(5 * time.Millisecond)
				continue
			}
			items := make([]core.Completion, len(jobs))
			for i, j := range jobs {
				items[i] = core.Completion{Lease: j.Lease}
			}
			if len(items) > 0 {
				if _, err := b.Complete(ctx, items); err != nil {
					noteErr(err) // these jobs stay running until rescued
				}
			}
		}
	}()

	<-halfway
	srv.stop() // SIGTERM: a clean shutdown
	if _, err := b.GetJob(ctx, "01ARZ3NDEKTSV4RRFFQ69G5FAV"); err == nil || !strings.HasPrefix(err.Error(), "redisq: ") {
		t.Errorf("GetJob while the server is down: %v", err)
	}
	if err := srv.start(); err != nil {
		t.Fatal(err)
	}
	// A crash: SIGKILL, then start again on the same directory.
	// Let the producer get at least one batch acknowledged by the restarted
	// server before crashing it.
	select {
	case <-progress:
	default:
	}
	<-progress
	_ = srv.cmd.Process.Signal(syscall.SIGKILL)
	_ = srv.cmd.Wait()
	srv.cmd = nil
	if err := srv.start(); err != nil {
		t.Fatal(err)
	}
	<-producerDone
	close(stopWork)
	<-workDone

	// Drain: jobs claimed before a restart whose completion was lost are
	// rescued once their lease has expired on the suite clock.
	for round := 0; round < 3; round++ {
		for {
			jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "d", WorkerID: "w", Limit: 100, LeaseTTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) == 0 {
				break
			}
			items := make([]core.Completion, len(jobs))
			for i, j := range jobs {
				items[i] = core.Completion{Lease: j.Lease}
			}
			if _, err := b.Complete(ctx, items); err != nil {
				t.Fatal(err)
			}
		}
		clock.Advance(2 * time.Minute)
		if _, err := b.Rescue(ctx, core.RescueRequest{Limit: 1000}); err != nil {
			t.Fatal(err)
		}
	}
	if len(acked) != total {
		t.Fatalf("%d enqueues acknowledged, want %d", len(acked), total)
	}
	for k, id := range acked {
		j, err := b.GetJob(ctx, id)
		if err != nil {
			t.Fatalf("acknowledged job %s (%s) lost: %v", id, k, err)
		}
		if j.State != core.StateSucceeded {
			t.Fatalf("job %s is %s", id, j.State)
		}
	}
	counts, err := b.CountJobs(ctx, core.JobFilter{Queue: "d"})
	if err != nil {
		t.Fatal(err)
	}
	if counts[core.StateSucceeded] != total || len(counts) != 1 {
		t.Fatalf("counts %v, want %d succeeded", counts, total)
	}
	t.Logf("%d calls failed while the server restarted", errCount)
}
