package redisq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boson-go/boson/conformance/testenv/testreq"
	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// scriptHook is a client hook that acts around the n-th script call the
// client sends (counted from 1 once armed): it runs before just before the
// call, and after just after it. With dead set, every command after the
// n-th script call fails without reaching the server, as if the client had
// died there.
type scriptHook struct {
	mu            sync.Mutex
	calls, at     int
	before, after func()
	dead          bool
	fired         bool
}

var errClientDead = errors.New("test: the client died")

func (h *scriptHook) arm(at int, before, after func(), dead bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls, h.at, h.before, h.after, h.dead, h.fired = 0, at, before, after, dead, false
}

// disarm stops the hook and reports whether it fired.
func (h *scriptHook) disarm() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.at = 0
	return h.fired
}

func (h *scriptHook) gone() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dead && h.fired && h.at > 0
}

func (h *scriptHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.gone() {
			return errClientDead
		}
		return next(ctx, cmds)
	}
}

func (h *scriptHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.gone() {
			return errClientDead
		}
		name := cmd.Name()
		if name != "evalsha" && name != "fcall" {
			return next(ctx, cmd)
		}
		h.mu.Lock()
		h.calls++
		fire := h.at > 0 && h.calls == h.at
		if fire {
			h.fired = true
		}
		before, after := h.before, h.after
		h.mu.Unlock()
		if fire && before != nil {
			before()
		}
		err := next(ctx, cmd)
		if fire && after != nil {
			after()
		}
		return err
	}
}

// loadScripts loads the library and every script of the backend on every
// master, so that no call meets a missing function or script and sends a
// second command.
func loadScripts(t *testing.T, c *redis.ClusterClient) {
	t.Helper()
	err := c.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error {
		if err := n.FunctionLoadReplace(ctx, library).Err(); err != nil {
			return err
		}
		for _, s := range allScripts {
			if err := n.ScriptLoad(ctx, s.src).Err(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// pickName returns the first of base0, base1, ... for which ok holds.
func pickName(t *testing.T, base string, ok func(name string) bool) string {
	t.Helper()
	for i := range 10000 {
		if n := base + strconv.Itoa(i); ok(n) {
			return n
		}
	}
	t.Fatalf("no name %s<n> fits", base)
	return ""
}

func slotOf(t *testing.T, c *redis.ClusterClient, key string) int64 {
	t.Helper()
	s, err := c.ClusterKeySlot(context.Background(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hookedCluster returns a backend with a manual clock on a client of the
// test cluster whose script calls hook watches, with every script loaded;
// queues qa and qb live in different slots.
func hookedCluster(t *testing.T) (*Backend, *scriptHook, *core.ManualClock) {
	t.Helper()
	base := clusterClient(t)
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: base.Options().Addrs})
	t.Cleanup(func() { client.Close() })
	hook := &scriptHook{}
	client.AddHook(hook)
	clock := core.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	b := newBackend(t, client, Options{Clock: clock})
	loadScripts(t, client)
	if slotOf(t, client, b.ks.queueKeys("qa")[kJob]) == slotOf(t, client, b.ks.queueKeys("qb")[kJob]) {
		t.Fatal("qa and qb share a slot")
	}
	return b, hook, clock
}

// batchLeftovers counts the prepared parts and decisions of cross-slot
// batches that queues still hold.
func batchLeftovers(ctx context.Context, b *Backend, queues ...string) (int64, error) {
	var n int64
	for _, q := range queues {
		keys := b.ks.queueKeys(q)
		for _, k := range []string{keys[kPend], keys[kTxn]} {
			c, err := b.rdb.HLen(ctx, k).Result()
			if err != nil {
				return 0, err
			}
			n += c
		}
	}
	return n, nil
}

// TestClusterBatchSurvivesKilledNode enqueues batches over three queues of
// a private cluster with appendfsync always, two of them in different slots
// of one node and the third on another node, and SIGKILLs the first node
// just before or just after each script call of the batch in turn. After
// the node is back and Rescue has run, every batch is stored whole or not
// at all, an acknowledged batch is stored, and the batch's idempotency keys
// are either held by its jobs or free.
func TestClusterBatchSurvivesKilledNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills a redis cluster")
	}
	requireServerBinary(t, testreq.RedisCluster)
	cl, err := startCluster("--appendonly", "yes", "--appendfsync", "always")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.stop)
	client, err := cl.newClient(func(o *redis.ClusterOptions) { o.MaxRetries = 1 })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	hook := &scriptHook{}
	client.AddHook(hook)

	prefix := pickName(t, "p", func(p string) bool { return cl.node(slotOf(t, client, "{"+p+"}:jobq")) == 0 })
	onNode := func(node int, other ...string) func(string) bool {
		return func(q string) bool {
			s := slotOf(t, client, "{"+prefix+":"+q+"}:job")
			for _, o := range other {
				if slotOf(t, client, "{"+prefix+":"+o+"}:job") == s {
					return false
				}
			}
			return cl.node(s) == node
		}
	}
	qa := pickName(t, "a", onNode(1))
	qb := pickName(t, "b", onNode(1, qa))
	qc := pickName(t, "c", onNode(2))
	queues := []string{qa, qb, qc}

	clock := core.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	b, err := New(client, Options{Prefix: prefix, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx := context.Background()
	loadScripts(t, client)

	victim := cl.servers[1]
	kill := func() {
		_ = victim.cmd.Process.Signal(syscall.SIGKILL)
		_ = victim.cmd.Wait()
		victim.cmd = nil
	}
	const perQueue = 4
	for call := 1; call <= 5; call++ {
		for _, when := range []string{"before", "after"} {
			task := fmt.Sprintf("t%d%s", call, when)
			var reqs []core.EnqueueRequest
			for _, q := range queues {
				for i := range perQueue {
					reqs = append(reqs, core.EnqueueRequest{Queue: q, Task: task, IdempotencyKey: fmt.Sprintf("%s-%d", task, i), Payload: []byte(q)})
				}
			}
			if when == "before" {
				hook.arm(call, kill, nil, false)
			} else {
				hook.arm(call, nil, kill, false)
			}
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			_, enqErr := b.Enqueue(cctx, reqs)
			cancel()
			fired := hook.disarm()
			if victim.cmd == nil {
				if err := victim.start(); err != nil {
					t.Fatal(err)
				}
				if err := cl.waitFormed(60 * time.Second); err != nil {
					t.Fatal(err)
				}
			}
			// Settle: past the batch timeout, Rescue finishes or drops every
			// part the batch left; past the retention, it forgets the
			// decisions.
			clock.Advance(BatchTimeout + time.Second)
			retained := false
			for try := 0; ; try++ {
				_, err := b.Rescue(ctx, core.RescueRequest{Limit: 100})
				var left int64
				if err == nil {
					left, err = batchLeftovers(ctx, b, queues...)
				}
				if err == nil && left == 0 {
					break
				}
				if err == nil && !retained {
					clock.Advance(batchRetention)
					retained = true
					continue
				}
				if try == 200 {
					t.Fatalf("%s: after Rescue: %v, %d batch parts or decisions left", task, err, left)
				}
				time.Sleep(50 * time.Millisecond)
			}
			perQ := map[string]int64{}
			var total int64
			for _, q := range queues {
				c, err := b.CountJobs(ctx, core.JobFilter{Queue: q, Task: task})
				if err != nil {
					t.Fatal(err)
				}
				perQ[q] = c[core.StateQueued]
				total += c[core.StateQueued]
			}
			t.Logf("%s (fired %v): Enqueue: %v; stored per queue %v", task, fired, enqErr, perQ)
			if total != 0 && total != int64(len(reqs)) {
				t.Fatalf("%s: half the batch is stored: %v of %d jobs", task, perQ, len(reqs))
			}
			if enqErr == nil && total == 0 {
				t.Fatalf("%s: an acknowledged batch is not stored", task)
			}
			// The keys are held by the batch's jobs, or free.
			cctx, cancel = context.WithTimeout(ctx, 30*time.Second)
			res, err := b.Enqueue(cctx, reqs)
			cancel()
			if err != nil {
				t.Fatalf("%s: the same batch again: %v", task, err)
			}
			for i, r := range res {
				if r.Reused != (total > 0) {
					t.Fatalf("%s: item %d reused %v after %d jobs were stored", task, i, r.Reused, total)
				}
			}
		}
	}
}

// TestClusterBatchClientDies simulates a client that dies in the middle of
// a cross-slot batch (every command after a chosen script call fails
// without reaching the cluster) and checks what the others see: a batch
// that did not commit is invisible, holds its keys and its in-flight
// count, and is aborted once the batch timeout has passed; a committed one
// is finished by whoever needs its keys, or by Rescue; a commit that comes
// after an abort refuses.
func TestClusterBatchClientDies(t *testing.T) {
	b, hook, clock := hookedCluster(t)
	ctx := context.Background()
	batch := func(task string) []core.EnqueueRequest {
		return []core.EnqueueRequest{
			{Queue: "qa", Task: task, IdempotencyKey: "ka-" + task},
			{Queue: "qb", Task: task, IdempotencyKey: "kb-" + task},
		}
	}
	count := func(task string) int64 {
		t.Helper()
		c, err := b.CountJobs(ctx, core.JobFilter{Task: task})
		if err != nil {
			t.Fatal(err)
		}
		page, err := b.ListJobs(ctx, core.JobFilter{Task: task})
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(page.Jobs)) != c[core.StateQueued] {
			t.Fatalf("task %s: %d listed, %v counted", task, len(page.Jobs), c)
		}
		return c[core.StateQueued]
	}
	// rescueLeaves runs Rescue and checks what batch parts and decisions
	// are left.
	rescueLeaves := func(t *testing.T, want int64) {
		t.Helper()
		if _, err := b.Rescue(ctx, core.RescueRequest{Limit: 10}); err != nil {
			t.Fatal(err)
		}
		if n, err := batchLeftovers(ctx, b, "qa", "qb"); err != nil || n != want {
			t.Fatalf("after Rescue: %d batch parts or decisions left, want %d (%v)", n, want, err)
		}
	}
	// The calls of a two-queue batch: 1 prepare qb, 2 commit qa, 3 apply qb.

	t.Run("before the commit", func(t *testing.T) {
		if err := b.PutTaskConfig(ctx, core.TaskConfig{Task: "t1", MaxInFlight: 2}); err != nil {
			t.Fatal(err)
		}
		hook.arm(1, nil, nil, true)
		if _, err := b.Enqueue(ctx, batch("t1")); !errors.Is(err, errClientDead) {
			t.Fatalf("Enqueue: %v, want the dead client's error", err)
		}
		hook.disarm()
		if n := count("t1"); n != 0 {
			t.Fatalf("%d jobs of an undecided batch are visible", n)
		}
		if jobs := b.mustClaim(t, "qb", 10); len(jobs) != 0 {
			t.Fatalf("claimed %d jobs of an undecided batch", len(jobs))
		}
		// Its prepared part counts against the in-flight limit of its queue.
		if _, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "qb", Task: "t1"}, {Queue: "qb", Task: "t1"}}); !errors.Is(err, core.ErrRateLimited) {
			t.Fatalf("enqueue past the limit with a prepared part: %v", err)
		}
		// Its keys stay reserved while the batch may still commit...
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err := b.Enqueue(wctx, []core.EnqueueRequest{{Queue: "qb", Task: "t1", IdempotencyKey: "kb-t1"}})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("enqueue under a reserved key: %v, want it to wait", err)
		}
		// ...and the batch is aborted once its timeout has passed.
		clock.Advance(BatchTimeout + time.Second)
		res, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "qb", Task: "t1", IdempotencyKey: "kb-t1"}})
		if err != nil || res[0].Reused {
			t.Fatalf("enqueue after the timeout: %+v %v", res, err)
		}
		if n := count("t1"); n != 1 {
			t.Fatalf("%d jobs, want only the new one", n)
		}
		// The abort decision stays for the retention, then Rescue drops it.
		rescueLeaves(t, 1)
		clock.Advance(batchRetention)
		rescueLeaves(t, 0)
	})

	t.Run("after the commit, finished by an enqueue", func(t *testing.T) {
		hook.arm(2, nil, nil, true)
		if _, err := b.Enqueue(ctx, batch("t2")); !errors.Is(err, errClientDead) {
			t.Fatalf("Enqueue: %v, want the dead client's error", err)
		}
		hook.disarm()
		if n := count("t2"); n != 1 {
			t.Fatalf("%d jobs visible after the commit, want the coordinator's", n)
		}
		res, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "qb", Task: "t2", IdempotencyKey: "kb-t2"}})
		if err != nil || !res[0].Reused || res[0].Job.Task != "t2" {
			t.Fatalf("enqueue under the committed batch's key: %+v %v", res, err)
		}
		if n := count("t2"); n != 2 {
			t.Fatalf("%d jobs, want the whole batch", n)
		}
		clock.Advance(BatchTimeout + time.Second)
		rescueLeaves(t, 0)
	})

	t.Run("after the commit, finished by Rescue", func(t *testing.T) {
		hook.arm(2, nil, nil, true)
		if _, err := b.Enqueue(ctx, batch("t3")); !errors.Is(err, errClientDead) {
			t.Fatalf("Enqueue: %v, want the dead client's error", err)
		}
		hook.disarm()
		rescueLeaves(t, 1) // the decision, until the batch timeout
		if n := count("t3"); n != 2 {
			t.Fatalf("%d jobs after Rescue, want the whole batch", n)
		}
		clock.Advance(BatchTimeout + time.Second)
		rescueLeaves(t, 0)
	})

	t.Run("a commit after an abort refuses", func(t *testing.T) {
		hook.arm(2, func() {
			clock.Advance(BatchTimeout + time.Second)
			if _, err := b.Rescue(ctx, core.RescueRequest{Limit: 10}); err != nil {
				t.Error(err)
			}
		}, nil, false)
		_, err := b.Enqueue(ctx, batch("t4"))
		if !hook.disarm() || !errors.Is(err, errBatchAborted) {
			t.Fatalf("Enqueue: %v, want the abort", err)
		}
		if n := count("t4"); n != 0 {
			t.Fatalf("%d jobs of an aborted batch", n)
		}
		res, err := b.Enqueue(ctx, batch("t4"))
		if err != nil || res[0].Reused || res[1].Reused {
			t.Fatalf("the batch again: %+v %v", res, err)
		}
		clock.Advance(batchRetention)
		rescueLeaves(t, 0)
	})
}
