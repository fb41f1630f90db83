package redisq

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/conformance/testenv/testreq"
	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// TestQueueKeysShareOneSlot checks on the cluster that every key of a queue
// hashes to one slot, and the cross-queue keys to another single slot.
func TestQueueKeysShareOneSlot(t *testing.T) {
	c := clusterClient(t)
	ctx := context.Background()
	ks := keyspace{prefix: "app"}
	slotOf := func(key string) int64 {
		s, err := c.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, q := range []string{"default", "a", "mail-high"} {
		keys := ks.queueKeys(q)
		want := slotOf(keys[0])
		for _, k := range keys[1:] {
			if got := slotOf(k); got != want {
				t.Errorf("%s is in slot %d, %s in %d", k, got, keys[0], want)
			}
		}
	}
	g := slotOf(ks.queues())
	for _, k := range []string{ks.tasks(), ks.jobQueue()} {
		if slotOf(k) != g {
			t.Errorf("%s is not in the slot of %s", k, ks.queues())
		}
	}
}

// TestClusterMultiQueueBatch: on the cluster, a batch over several queues
// that one queue refuses stores nothing in any queue, and one that passes
// stores everything.
func TestClusterMultiQueueBatch(t *testing.T) {
	ctx := context.Background()
	clock := core.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	b := newBackend(t, clusterClient(t), Options{Clock: clock})
	if !b.sharded {
		t.Fatal("a cluster client must be treated as sharded")
	}
	first := b.mustEnqueue(t, core.EnqueueRequest{Queue: "q2", Task: "t", IdempotencyKey: "k", Payload: []byte("a")})
	_, err := b.Enqueue(ctx, []core.EnqueueRequest{
		{Queue: "q1", Task: "t"},
		{Queue: "q3", Task: "t"},
		{Queue: "q2", Task: "t", IdempotencyKey: "k", Payload: []byte("different")},
	})
	var be *core.BatchError
	if !errors.Is(err, core.ErrIdempotencyConflict) || !errors.As(err, &be) || be.Index != 2 {
		t.Fatalf("err = %v, want a conflict of item 2", err)
	}
	counts, err := b.CountJobs(ctx, core.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if counts[core.StateQueued] != 1 {
		t.Fatalf("after a refused batch: %v, want only the first job", counts)
	}
	res, err := b.Enqueue(ctx, []core.EnqueueRequest{
		{Queue: "q1", Task: "t"},
		{Queue: "q3", Task: "t"},
		{Queue: "q2", Task: "t", IdempotencyKey: "k", Payload: []byte("a")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res[2].Reused || res[2].Job.ID != first.ID || res[0].Reused || res[1].Reused {
		t.Fatalf("results %+v", res)
	}
	for _, r := range res {
		j, err := b.GetJob(ctx, r.Job.ID)
		if err != nil || j.Queue != r.Job.Queue {
			t.Fatalf("GetJob(%s): %+v %v", r.Job.ID, j, err)
		}
	}
}

// TestLargestBatches runs every batch operation at the default MaxBatch,
// which is larger than what a Lua call can unpack at once.
func TestLargestBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 20,000 jobs")
	}
	ctx := context.Background()
	clock := core.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	// A script over 10,000 jobs may run for seconds on a busy machine, and
	// Redis serves nobody else meanwhile: use a private server, so that tests
	// sharing the common one are not held up, and give the client room to
	// wait rather than time out.
	requireServerBinary(t, testreq.RedisServer)
	srv, err := startServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	c := redis.NewClient(&redis.Options{Addr: srv.addr(), ReadTimeout: 5 * time.Minute})
	t.Cleanup(func() { c.Close() })
	b := newBackend(t, c, Options{Clock: clock})
	max := core.DefaultLimits.MaxBatch
	reqs := make([]core.EnqueueRequest, max)
	for i := range reqs {
		reqs[i] = core.EnqueueRequest{Queue: "big", Task: "t", RunAt: clock.Now().Add(time.Second)}
	}
	if _, err := b.Enqueue(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	jobs := b.mustClaim(t, "big", max)
	if len(jobs) != max {
		t.Fatalf("claimed %d", len(jobs))
	}
	items := make([]core.Completion, max)
	for i, j := range jobs {
		items[i] = core.Completion{Lease: j.Lease}
	}
	if _, err := b.Enqueue(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	more := b.mustClaim(t, "big", max)
	errs, err := b.Complete(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		if e != nil {
			t.Fatal(e)
		}
	}
	clock.Advance(time.Hour)
	rr, err := b.Rescue(ctx, core.RescueRequest{Limit: max})
	if err != nil || rr.Requeued != len(more) {
		t.Fatalf("rescue %+v %v", rr, err)
	}
	n, err := b.Cleanup(ctx, core.CleanupRequest{FinishedBefore: clock.Now(), Limit: max})
	if err != nil || n != max {
		t.Fatalf("cleanup %d %v", n, err)
	}
	counts, _ := b.CountJobs(ctx, core.JobFilter{})
	if counts[core.StateQueued] != int64(max) || len(counts) != 1 {
		t.Fatalf("counts %v", counts)
	}
}

// TestServerClock: without Options.Clock every decision uses Redis TIME.
func TestServerClock(t *testing.T) {
	ctx := context.Background()
	c := standaloneClient(t)
	b := newBackend(t, c, Options{})
	srv, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Enqueue(ctx, []core.EnqueueRequest{
		{Queue: "q", Task: "now"},
		{Queue: "q", Task: "later", RunAt: srv.Add(time.Hour)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := res[0].Job.CreatedAt.Sub(srv); d < 0 || d > time.Minute {
		t.Fatalf("CreatedAt %v, server time %v", res[0].Job.CreatedAt, srv)
	}
	jobs := b.mustClaim(t, "q", 10)
	if len(jobs) != 1 || jobs[0].Task != "now" {
		t.Fatalf("claimed %+v", jobs)
	}
	if d := jobs[0].Lease.ExpiresAt.Sub(srv); d < time.Minute || d > 2*time.Minute {
		t.Fatalf("lease expires %v after the server time", d)
	}
	l, err := b.Heartbeat(ctx, jobs[0].Lease, time.Hour)
	if err != nil || l.ExpiresAt.Sub(srv) < time.Hour {
		t.Fatalf("heartbeat %+v %v", l, err)
	}
}

// TestUnreachableServer: with Redis gone every call returns an error that
// the backend wrapped, and nothing panics.
func TestUnreachableServer(t *testing.T) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + itoa(int64(port)), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	b, err := New(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx := context.Background()
	lease := core.Lease{JobID: "01ARZ3NDEKTSV4RRFFQ69G5FAV", Token: 1}
	calls := map[string]func() error{
		"Enqueue": func() error { _, err := b.Enqueue(ctx, []core.EnqueueRequest{{Task: "t"}}); return err },
		"Claim": func() error {
			_, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 1, LeaseTTL: time.Second})
			return err
		},
		"Heartbeat":      func() error { _, err := b.Heartbeat(ctx, lease, time.Second); return err },
		"Complete":       func() error { _, err := b.Complete(ctx, []core.Completion{{Lease: lease}}); return err },
		"Fail":           func() error { _, err := b.Fail(ctx, core.Failure{Lease: lease}); return err },
		"Sleep":          func() error { return b.Sleep(ctx, lease, time.Now()) },
		"SaveCheckpoint": func() error { _, err := b.SaveCheckpoint(ctx, lease, "s", nil); return err },
		"Checkpoints":    func() error { _, err := b.Checkpoints(ctx, lease.JobID); return err },
		"Rescue":         func() error { _, err := b.Rescue(ctx, core.RescueRequest{Limit: 1}); return err },
		"Cancel":         func() error { _, err := b.Cancel(ctx, lease.JobID, ""); return err },
		"Retry":          func() error { _, err := b.Retry(ctx, lease.JobID); return err },
		"GetJob":         func() error { _, err := b.GetJob(ctx, lease.JobID); return err },
		"ListJobs":       func() error { _, err := b.ListJobs(ctx, core.JobFilter{}); return err },
		"CountJobs":      func() error { _, err := b.CountJobs(ctx, core.JobFilter{}); return err },
		"ListRuns":       func() error { _, err := b.ListRuns(ctx, lease.JobID); return err },
		"TaskStats":      func() error { _, err := b.TaskStats(ctx, "t"); return err },
		"ListQueues":     func() error { _, err := b.ListQueues(ctx); return err },
		"GetTaskConfig":  func() error { _, err := b.GetTaskConfig(ctx, "t"); return err },
		"PutTaskConfig":  func() error { return b.PutTaskConfig(ctx, core.TaskConfig{Task: "t"}) },
		"GetQueueConfig": func() error { _, err := b.GetQueueConfig(ctx, "q"); return err },
		"PutQueueConfig": func() error { return b.PutQueueConfig(ctx, core.QueueConfig{Queue: "q"}) },
		"Cleanup": func() error {
			_, err := b.Cleanup(ctx, core.CleanupRequest{FinishedBefore: time.Now(), Limit: 1})
			return err
		},
	}
	for name, call := range calls {
		err := call()
		if err == nil || !strings.HasPrefix(err.Error(), "redisq: ") {
			t.Errorf("%s: %v, want an error wrapped by the backend", name, err)
		}
	}
	sig, stop := b.Subscribe("q")
	if sig == nil {
		t.Error("Subscribe returned a nil channel")
	}
	stop()
}

func (b *Backend) mustEnqueue(t *testing.T, r core.EnqueueRequest) core.Job {
	t.Helper()
	res, err := b.Enqueue(context.Background(), []core.EnqueueRequest{r})
	if err != nil {
		t.Fatal(err)
	}
	return res[0].Job
}

func (b *Backend) mustClaim(t *testing.T, queue string, limit int) []core.Job {
	t.Helper()
	jobs, err := b.Claim(context.Background(), core.ClaimRequest{Queue: queue, WorkerID: "w", Limit: limit, LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// TestLostJobMapIsRestored: a job whose id -> queue entry was lost (as a
// failover of the {prefix} slot's node could) is found in its queue and
// mapped again.
func TestLostJobMapIsRestored(t *testing.T) {
	ctx := context.Background()
	clock := core.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	c := standaloneClient(t)
	b := newBackend(t, c, Options{Clock: clock})
	j := b.mustEnqueue(t, core.EnqueueRequest{Queue: "q", Task: "t"})
	if err := c.HDel(ctx, b.ks.jobQueue(), j.ID).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := b.GetJob(ctx, j.ID)
	if err != nil || got.ID != j.ID {
		t.Fatalf("GetJob: %+v %v", got, err)
	}
	if q, err := c.HGet(ctx, b.ks.jobQueue(), j.ID).Result(); err != nil || q != "q" {
		t.Fatalf("map entry %q %v", q, err)
	}
	if _, err := b.GetJob(ctx, "01ARZ3NDEKTSV4RRFFQ69G5FAV"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("unknown job: %v", err)
	}
}

// TestListRunningPages: running jobs are listed from the lease set, not the
// index; pages over them, with and without a task, in both orders, visit
// every running job once in id order.
func TestListRunningPages(t *testing.T) {
	ctx := context.Background()
	clock := core.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	b := newBackend(t, standaloneClient(t), Options{Clock: clock})
	var reqs []core.EnqueueRequest
	for i := range 40 {
		reqs = append(reqs, core.EnqueueRequest{Queue: "q", Task: []string{"a", "b"}[i%2]})
	}
	if _, err := b.Enqueue(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	claimed := b.mustClaim(t, "q", 25)
	want := map[string][]string{}
	for _, j := range claimed {
		want[""] = append(want[""], j.ID)
		want[j.Task] = append(want[j.Task], j.ID)
	}
	for _, task := range []string{"", "a", "b"} {
		for _, desc := range []bool{false, true} {
			for _, states := range [][]core.JobState{{core.StateRunning}, {core.StateRunning, core.StateSucceeded}} {
				exp := slices.Clone(want[task])
				slices.Sort(exp)
				if desc {
					slices.Reverse(exp)
				}
				var got []string
				f := core.JobFilter{Queue: "q", Task: task, States: states, Limit: 4, Desc: desc}
				for {
					page, err := b.ListJobs(ctx, f)
					if err != nil {
						t.Fatal(err)
					}
					for _, j := range page.Jobs {
						if j.State != core.StateRunning {
							t.Fatalf("listed a %s job", j.State)
						}
						got = append(got, j.ID)
					}
					if page.Next == "" {
						break
					}
					f.Cursor = page.Next
				}
				if !slices.Equal(got, exp) {
					t.Fatalf("task %q desc %v states %v: listed %v, want %v", task, desc, states, got, exp)
				}
			}
		}
	}
	counts, err := b.CountJobs(ctx, core.JobFilter{Queue: "q"})
	if err != nil || counts[core.StateRunning] != 25 || counts[core.StateQueued] != 15 {
		t.Fatalf("counts %v %v", counts, err)
	}
}
