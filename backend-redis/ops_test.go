package redisq

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// onBoth runs fn on a fresh backend with a manual clock on one node and on
// the cluster.
func onBoth(t *testing.T, fn func(t *testing.T, b *Backend, clock *core.ManualClock)) {
	for _, c := range []struct {
		name   string
		client func(t testing.TB) redis.UniversalClient
	}{
		{"standalone", func(t testing.TB) redis.UniversalClient { return standaloneClient(t) }},
		{"cluster", func(t testing.TB) redis.UniversalClient { return clusterClient(t) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := core.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
			fn(t, newBackend(t, c.client(t), Options{Clock: clock}), clock)
		})
	}
}

// queueKeysLeft returns the keys of queue that exist but its rate set,
// whose members expire by themselves, and its counters when all are zero.
func queueKeysLeft(t *testing.T, b *Backend, queue string) []string {
	t.Helper()
	ctx := context.Background()
	var left []string
	for i, k := range b.ks.queueKeys(queue) {
		if i == kRate {
			continue
		}
		if i == kCnt || i == kRstat {
			m, err := b.rdb.HGetAll(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			for f, v := range m {
				if v != "0" {
					left = append(left, k+" "+f+"="+v)
				}
			}
			continue
		}
		n, err := b.rdb.Exists(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			left = append(left, k)
		}
	}
	return left
}

// TestDeleteJob: a deleted job leaves nothing behind in its queue (runs,
// checkpoints, result, index entries, counts, run statistics) and releases
// its idempotency key; a running job needs force, after which its lease's
// fenced calls fail with ErrLeaseLost.
func TestDeleteJob(t *testing.T) {
	onBoth(t, func(t *testing.T, b *Backend, clock *core.ManualClock) {
		ctx := context.Background()
		if err := b.DeleteJob(ctx, "01ARZ3NDEKTSV4RRFFQ69G5FAV", false); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("missing job: %v", err)
		}
		if err := b.DeleteJob(ctx, "", false); !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("empty id: %v", err)
		}
		// a job with two runs (one failed), a checkpoint and a key
		j := b.mustEnqueue(t, core.EnqueueRequest{Queue: "q", Task: "t", IdempotencyKey: "k", MaxAttempts: 3})
		c := b.mustClaim(t, "q", 1)[0]
		if _, err := b.SaveCheckpoint(ctx, c.Lease, "s", []byte("v")); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Fail(ctx, core.Failure{Lease: c.Lease, Error: "boom"}); err != nil {
			t.Fatal(err)
		}
		c = b.mustClaim(t, "q", 1)[0]
		if err := b.DeleteJob(ctx, j.ID, false); !errors.Is(err, core.ErrInvalidState) {
			t.Fatalf("running job without force: %v", err)
		}
		if err := b.DeleteJob(ctx, j.ID, true); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Heartbeat(ctx, c.Lease, time.Minute); !errors.Is(err, core.ErrLeaseLost) {
			t.Fatalf("heartbeat after force delete: %v", err)
		}
		if _, err := b.SaveCheckpoint(ctx, c.Lease, "s2", nil); !errors.Is(err, core.ErrLeaseLost) {
			t.Fatalf("checkpoint after force delete: %v", err)
		}
		if _, err := b.Fail(ctx, core.Failure{Lease: c.Lease, Error: "x"}); !errors.Is(err, core.ErrLeaseLost) {
			t.Fatalf("fail after force delete: %v", err)
		}
		if errs, err := b.Complete(ctx, []core.Completion{{Lease: c.Lease}}); err != nil || !errors.Is(errs[0], core.ErrLeaseLost) {
			t.Fatalf("complete after force delete: %v %v", errs, err)
		}
		if _, err := b.GetJob(ctx, j.ID); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("GetJob after delete: %v", err)
		}
		if _, err := b.ListRuns(ctx, j.ID); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("ListRuns after delete: %v", err)
		}
		if err := b.DeleteJob(ctx, j.ID, true); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("second delete: %v", err)
		}
		if left := queueKeysLeft(t, b, "q"); len(left) > 0 {
			t.Fatalf("keys left after deleting the only job: %v", left)
		}
		st, err := b.TaskStats(ctx, "t")
		if err != nil || len(st.Jobs) != 0 || len(st.Runs) != 0 || st.RunTime != 0 {
			t.Fatalf("task stats after delete: %+v %v", st, err)
		}
		again := b.mustEnqueue(t, core.EnqueueRequest{Queue: "q", Task: "t", IdempotencyKey: "k", Payload: []byte("other")})
		if again.ID == j.ID {
			t.Fatal("the key still names the deleted job")
		}
		// a finished job with a result
		if err := b.DeleteJob(ctx, again.ID, false); err != nil {
			t.Fatal(err)
		}
		d := b.mustEnqueue(t, core.EnqueueRequest{Queue: "q", Task: "t"})
		c = b.mustClaim(t, "q", 1)[0]
		if _, err := b.Complete(ctx, []core.Completion{{Lease: c.Lease, Result: []byte("r")}}); err != nil {
			t.Fatal(err)
		}
		if err := b.DeleteJob(ctx, d.ID, false); err != nil {
			t.Fatal(err)
		}
		if left := queueKeysLeft(t, b, "q"); len(left) > 0 {
			t.Fatalf("keys left after deleting a finished job: %v", left)
		}
	})
}

// TestDeleteQueueSteps: a queue is deleted in steps of at most Limit jobs
// in every state; the step that leaves no job deletes its config and says
// Done, and nothing of the queue remains.
func TestDeleteQueueSteps(t *testing.T) {
	onBoth(t, func(t *testing.T, b *Backend, clock *core.ManualClock) {
		ctx := context.Background()
		if _, err := b.DeleteQueue(ctx, core.DeleteQueueRequest{Queue: "q", Limit: 0}); !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("limit 0: %v", err)
		}
		if _, err := b.DeleteQueue(ctx, core.DeleteQueueRequest{Queue: "a b", Limit: 1}); !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("bad name: %v", err)
		}
		var reqs []core.EnqueueRequest
		for i := range 25 {
			r := core.EnqueueRequest{Queue: "q", Task: []string{"a", "b", "c"}[i%3], IdempotencyKey: "k" + itoa(int64(i))}
			if i%5 == 0 {
				r.RunAt = clock.Now().Add(time.Hour)
			}
			reqs = append(reqs, r)
		}
		if _, err := b.Enqueue(ctx, reqs); err != nil {
			t.Fatal(err)
		}
		other := b.mustEnqueue(t, core.EnqueueRequest{Queue: "other", Task: "a"})
		if err := b.PutQueueConfig(ctx, core.QueueConfig{Queue: "q", Paused: false, CleanupLimit: 5}); err != nil {
			t.Fatal(err)
		}
		running := b.mustClaim(t, "q", 6)
		if _, err := b.Complete(ctx, []core.Completion{{Lease: running[0].Lease}}); err != nil {
			t.Fatal(err)
		}
		if err := b.PutQueueConfig(ctx, core.QueueConfig{Queue: "q", Paused: true}); err != nil {
			t.Fatal(err)
		}
		var steps []core.DeleteQueueResult
		for range 10 {
			res, err := b.DeleteQueue(ctx, core.DeleteQueueRequest{Queue: "q", Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			steps = append(steps, res)
			if res.Done {
				break
			}
		}
		want := []core.DeleteQueueResult{{Deleted: 10}, {Deleted: 10}, {Deleted: 5, Done: true}}
		if len(steps) != len(want) {
			t.Fatalf("steps %+v, want %+v", steps, want)
		}
		for i := range want {
			if steps[i] != want[i] {
				t.Fatalf("steps %+v, want %+v", steps, want)
			}
		}
		if _, err := b.Heartbeat(ctx, running[1].Lease, time.Minute); !errors.Is(err, core.ErrLeaseLost) {
			t.Fatalf("heartbeat of a deleted queue's job: %v", err)
		}
		if left := queueKeysLeft(t, b, "q"); len(left) > 0 {
			t.Fatalf("keys left after deleting the queue: %v", left)
		}
		cfg, err := b.GetQueueConfig(ctx, "q")
		if err != nil || cfg.Paused || cfg.CleanupLimit != 0 {
			t.Fatalf("config after delete: %+v %v", cfg, err)
		}
		qs, err := b.ListQueues(ctx)
		if err != nil || len(qs) != 1 || qs[0].Queue != "other" {
			t.Fatalf("queues after delete: %+v %v", qs, err)
		}
		if _, err := b.GetJob(ctx, other.ID); err != nil {
			t.Fatalf("a job of another queue: %v", err)
		}
		res, err := b.DeleteQueue(ctx, core.DeleteQueueRequest{Queue: "q", Limit: 10})
		if err != nil || res != (core.DeleteQueueResult{Done: true}) {
			t.Fatalf("deleting a deleted queue: %+v %v", res, err)
		}
		// the keys are free again
		if _, err := b.Enqueue(ctx, reqs[:1]); err != nil {
			t.Fatal(err)
		}
		n, err := b.CountJobs(ctx, core.JobFilter{Queue: "q"})
		if err != nil || n[core.StateQueued]+n[core.StateSleeping] != 1 {
			t.Fatalf("counts after enqueue: %v %v", n, err)
		}
	})
}

// TestDeleteQueueWhileWorked: workers claim, checkpoint and complete jobs
// of a queue while it is deleted step by step; every fenced call either
// works or fails with ErrLeaseLost, and once a step says Done (after the
// workers stopped) nothing of the queue is left, counters included.
func TestDeleteQueueWhileWorked(t *testing.T) {
	onBoth(t, func(t *testing.T, b *Backend, clock *core.ManualClock) {
		ctx := context.Background()
		var reqs []core.EnqueueRequest
		for i := range 600 {
			reqs = append(reqs, core.EnqueueRequest{Queue: "q", Task: []string{"a", "b"}[i%2], IdempotencyKey: "k" + itoa(int64(i))})
		}
		if _, err := b.Enqueue(ctx, reqs); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		errs := make(chan error, 4)
		for w := range 3 {
			go func() {
				for {
					select {
					case <-stop:
						errs <- nil
						return
					default:
					}
					jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w" + itoa(int64(w)), Limit: 5, LeaseTTL: time.Minute})
					if err != nil {
						errs <- err
						return
					}
					for _, j := range jobs {
						if _, err := b.SaveCheckpoint(ctx, j.Lease, "s", []byte("v")); err != nil && !errors.Is(err, core.ErrLeaseLost) {
							errs <- err
							return
						}
						res, err := b.Complete(ctx, []core.Completion{{Lease: j.Lease, Result: []byte("r")}})
						if err != nil || res[0] != nil && !errors.Is(res[0], core.ErrLeaseLost) {
							errs <- errors.Join(err, res[0])
							return
						}
					}
				}
			}()
		}
		deleted := 0
		for range 4 {
			res, err := b.DeleteQueue(ctx, core.DeleteQueueRequest{Queue: "q", Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			deleted += res.Deleted
		}
		close(stop)
		for range 3 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		for {
			res, err := b.DeleteQueue(ctx, core.DeleteQueueRequest{Queue: "q", Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			deleted += res.Deleted
			if res.Done {
				break
			}
		}
		if deleted != 600 {
			t.Fatalf("deleted %d jobs, want 600", deleted)
		}
		if left := queueKeysLeft(t, b, "q"); len(left) > 0 {
			t.Fatalf("keys left: %v", left)
		}
	})
}

// TestClusterDeleteQueueKeepsBatchParts: deleting the queues of a
// cross-slot batch whose client died after its prepare, or after its
// commit, leaves the prepared part, its in-flight count and the decision
// in place, so that Rescue still aborts or finishes the batch as a whole;
// the jobs it then stores are deleted by a later step.
func TestClusterDeleteQueueKeepsBatchParts(t *testing.T) {
	b, hook, clock := hookedCluster(t)
	ctx := context.Background()
	batch := func(task string) []core.EnqueueRequest {
		return []core.EnqueueRequest{{Queue: "qa", Task: task, IdempotencyKey: "ka"}, {Queue: "qb", Task: task, IdempotencyKey: "kb"}}
	}
	deleteAll := func(queue string) int {
		t.Helper()
		n := 0
		for {
			res, err := b.DeleteQueue(ctx, core.DeleteQueueRequest{Queue: queue, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			n += res.Deleted
			if res.Done {
				return n
			}
		}
	}
	rescue := func() {
		t.Helper()
		if _, err := b.Rescue(ctx, core.RescueRequest{Limit: 10}); err != nil {
			t.Fatal(err)
		}
	}
	// The calls of a two-queue batch: 1 prepare qb, 2 commit qa, 3 apply qb.
	t.Run("undecided", func(t *testing.T) {
		if err := b.PutTaskConfig(ctx, core.TaskConfig{Task: "t1", MaxInFlight: 2}); err != nil {
			t.Fatal(err)
		}
		hook.arm(1, nil, nil, true)
		if _, err := b.Enqueue(ctx, batch("t1")); !errors.Is(err, errClientDead) {
			t.Fatalf("Enqueue: %v, want the dead client's error", err)
		}
		hook.disarm()
		if n := deleteAll("qb"); n != 0 {
			t.Fatalf("deleted %d jobs of an undecided part", n)
		}
		// the part still counts against the in-flight limit
		if _, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "qb", Task: "t1"}, {Queue: "qb", Task: "t1"}}); !errors.Is(err, core.ErrRateLimited) {
			t.Fatalf("enqueue past the limit with a prepared part: %v", err)
		}
		clock.Advance(BatchTimeout + time.Second)
		rescue()
		clock.Advance(batchRetention)
		rescue()
		if n, err := batchLeftovers(ctx, b, "qa", "qb"); err != nil || n != 0 {
			t.Fatalf("%d batch parts or decisions left (%v)", n, err)
		}
		if left := queueKeysLeft(t, b, "qb"); len(left) > 0 {
			t.Fatalf("keys of qb left: %v", left)
		}
	})
	t.Run("committed", func(t *testing.T) {
		hook.arm(2, nil, nil, true)
		if _, err := b.Enqueue(ctx, batch("t2")); !errors.Is(err, errClientDead) {
			t.Fatalf("Enqueue: %v, want the dead client's error", err)
		}
		hook.disarm()
		if n := deleteAll("qb"); n != 0 {
			t.Fatalf("deleted %d jobs of a part not applied yet", n)
		}
		if n := deleteAll("qa"); n != 1 {
			t.Fatalf("deleted %d jobs of the coordinator, want 1", n)
		}
		rescue() // applies qb's part: the batch was decided
		if n := deleteAll("qb"); n != 1 {
			t.Fatalf("deleted %d jobs of the applied part, want 1", n)
		}
		clock.Advance(BatchTimeout + time.Second)
		rescue()
		if n, err := batchLeftovers(ctx, b, "qa", "qb"); err != nil || n != 0 {
			t.Fatalf("%d batch parts or decisions left (%v)", n, err)
		}
		for _, q := range []string{"qa", "qb"} {
			if left := queueKeysLeft(t, b, q); len(left) > 0 {
				t.Fatalf("keys of %s left: %v", q, left)
			}
		}
	})
}
