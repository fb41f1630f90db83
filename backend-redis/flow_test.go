package redisq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// TestOneSlotKeys: with OneSlot every key of the prefix, the flow keys
// included, hashes to the slot of {prefix} on the cluster; without it a
// queue's flow keys are the queue's.
func TestOneSlotKeys(t *testing.T) {
	c := clusterClient(t)
	ctx := context.Background()
	slotOf := func(key string) int64 {
		s, err := c.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	one := keyspace{prefix: "app", oneSlot: true, nsFlow: true}
	want := slotOf(one.queues())
	for _, q := range []string{"default", "a", "mail-high"} {
		for _, k := range one.queueKeys(q) {
			if slotOf(k) != want {
				t.Errorf("%s is not in the slot of %s", k, one.queues())
			}
		}
	}
	per := keyspace{prefix: "app"}
	for _, q := range []string{"a", "b"} {
		keys := per.queueKeys(q)
		for _, k := range []int{kFlow, kTflow, kGate, kGatet, kSeqh, kSeqw} {
			if slotOf(keys[k]) != slotOf(keys[kJob]) {
				t.Errorf("%s is not in the slot of %s", keys[k], keys[kJob])
			}
		}
	}
}

// TestFlowSlotPerQueue: on a cluster with a slot per queue, task flow
// limits are refused with ErrUnsupported and RunningByKey is unsupported,
// while queue limits, sequences and unique modes, which live in one queue,
// work.
func TestFlowSlotPerQueue(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, clusterClient(t), Options{})
	for _, cfg := range []core.TaskConfig{
		{Task: "t", MaxRunning: 1}, {Task: "t", MaxRunningPerKey: 1}, {Task: "t", MaxStartsPerSecond: 1},
		{Task: "t", MaxStartsPerSecondPerKey: 1}, {Task: "t", HoldSequenceOnFailure: true},
	} {
		if err := b.PutTaskConfig(ctx, cfg); !errors.Is(err, core.ErrUnsupported) {
			t.Errorf("PutTaskConfig(%+v) = %v, want ErrUnsupported", cfg, err)
		}
	}
	if err := b.PutTaskConfig(ctx, core.TaskConfig{Task: "t", MaxInFlight: 10}); err != nil {
		t.Fatalf("a config without flow limits: %v", err)
	}
	if _, err := b.RunningByKey(ctx, "t", 0); !errors.Is(err, core.ErrUnsupported) {
		t.Errorf("RunningByKey = %v, want ErrUnsupported", err)
	}
	if err := b.PutQueueConfig(ctx, core.QueueConfig{Queue: "q", MaxRunning: 2}); err != nil {
		t.Fatal(err)
	}
	var reqs []core.EnqueueRequest
	for range 3 {
		reqs = append(reqs, core.EnqueueRequest{Queue: "q", Task: "t", SequenceKey: "s"})
	}
	reqs = append(reqs, core.EnqueueRequest{Queue: "q", Task: "t"}, core.EnqueueRequest{Queue: "q", Task: "t"})
	res, err := b.Enqueue(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	claim := func(want ...string) []core.Job {
		t.Helper()
		jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 10, LeaseTTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != len(want) {
			t.Fatalf("claimed %d jobs, want %d", len(jobs), len(want))
		}
		for i, j := range jobs {
			if j.ID != want[i] {
				t.Fatalf("claimed %s at %d, want %s", j.ID, i, want[i])
			}
		}
		return jobs
	}
	// the sequence's head and one plain job: the queue holds two
	got := claim(res[0].Job.ID, res[3].Job.ID)
	claim()
	if _, err := b.Complete(ctx, []core.Completion{{Lease: got[0].Lease}}); err != nil {
		t.Fatal(err)
	}
	claim(res[1].Job.ID)
	// while active: free once terminal, taken by a new job
	u, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "u", Task: "t", IdempotencyKey: "k", Unique: core.UniqueWhileActive}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Cancel(ctx, u[0].Job.ID, "stop"); err != nil {
		t.Fatal(err)
	}
	u2, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "u", Task: "t", IdempotencyKey: "k", Unique: core.UniqueWhileActive}})
	if err != nil || u2[0].Reused {
		t.Fatalf("enqueue after the key was freed: %+v, %v", u2, err)
	}
	if _, err := b.Retry(ctx, u[0].Job.ID); !errors.Is(err, core.ErrIdempotencyConflict) {
		t.Fatalf("Retry of a job whose key another holds: %v", err)
	}
}

// TestGateLetsNextInAfterCancel: a job let back from a gate that is
// cancelled before a claim takes it lets the next held-back job in, so no
// held-back job waits on a group with room and nothing running.
func TestGateLetsNextInAfterCancel(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, standaloneClient(t), Options{})
	if err := b.PutTaskConfig(ctx, core.TaskConfig{Task: "t", MaxRunningPerKey: 1}); err != nil {
		t.Fatal(err)
	}
	var reqs []core.EnqueueRequest
	for range 4 {
		reqs = append(reqs, core.EnqueueRequest{Queue: "q", Task: "t", LimitKey: "a"})
	}
	res, err := b.Enqueue(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	claim := func() []core.Job {
		t.Helper()
		jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 10, LeaseTTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	first := claim()
	if len(first) != 1 || first[0].ID != res[0].Job.ID {
		t.Fatalf("first claim %v", first)
	}
	gated, err := b.rdb.ZCard(ctx, b.ks.queueKeys("q")[kGate]).Result()
	if err != nil || gated != 3 {
		t.Fatalf("%d jobs in the gate (%v), want 3", gated, err)
	}
	if _, err := b.Complete(ctx, []core.Completion{{Lease: first[0].Lease}}); err != nil {
		t.Fatal(err)
	}
	// the completion let res[1] back; cancelling it lets res[2] in
	if _, err := b.Cancel(ctx, res[1].Job.ID, "no"); err != nil {
		t.Fatal(err)
	}
	next := claim()
	if len(next) != 1 || next[0].ID != res[2].Job.ID {
		t.Fatalf("claim after the cancel: %v, want %s", next, res[2].Job.ID)
	}
	if n, _ := b.RunningByKey(ctx, "t", 0); len(n) != 1 || n[0].Running != 1 {
		t.Fatalf("RunningByKey %v", n)
	}
	// deleting the running job frees the key for the last one
	if err := b.DeleteJob(ctx, next[0].ID, true); err != nil {
		t.Fatal(err)
	}
	last := claim()
	if len(last) != 1 || last[0].ID != res[3].Job.ID {
		t.Fatalf("claim after the delete: %v", last)
	}
}

// TestPendItemsOldLayout: the items of a batch part prepared before items
// had a flow value (10 values each) are read with an empty flow value; a
// part of this layout is read as it is.
func TestPendItemsOldLayout(t *testing.T) {
	ctx := context.Background()
	c := standaloneClient(t)
	body := `
local A = {}
for i = 1, tonumber(ARGV[1]) * tonumber(ARGV[2]) do A[i] = 'v' .. i end
for b = 1, #A, tonumber(ARGV[2]) do A[b] = '1' end
if ARGV[2] == '11' then for b = 11, #A, 11 do A[b] = ARGV[3] end end
return pendItems(A)
`
	src := luaLibFor(body) + body
	for _, c2 := range []struct {
		items, width int
		flow         string
	}{{1, 10, ""}, {11, 10, ""}, {3, 11, ""}, {11, 11, "0|s"}} {
		v, err := c.Eval(ctx, src, nil, c2.items, c2.width, c2.flow).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		if len(v) != 11*c2.items {
			t.Fatalf("%+v: %d values, want %d", c2, len(v), 11*c2.items)
		}
		for b := 0; b < len(v); b += 11 {
			if v[b] != "1" || v[b+10] != c2.flow {
				t.Fatalf("%+v: item at %d is %v", c2, b, v[b:b+11])
			}
		}
	}
}

// TestFlowStartWindowsExpire: the start window of a rate-limited key is
// deleted once it ended a minute ago, so that a store that sees new keys
// all the time does not keep a window for every key it ever saw.
func TestFlowStartWindowsExpire(t *testing.T) {
	ctx := context.Background()
	c := standaloneClient(t)
	clock := core.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	be := newBackend(t, c, Options{Clock: clock})
	if err := be.PutTaskConfig(ctx, core.TaskConfig{Task: "t", MaxStartsPerSecondPerKey: 5}); err != nil {
		t.Fatal(err)
	}
	windows := func() int {
		fs, err := c.HKeys(ctx, be.ks.queueKeys("q")[kFlow]).Result()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range fs {
			if strings.HasPrefix(f, "rk|") {
				n++
			}
		}
		return n
	}
	drain := func(prefix string, n int) {
		t.Helper()
		reqs := make([]core.EnqueueRequest, n)
		for i := range reqs {
			reqs[i] = core.EnqueueRequest{Queue: "q", Task: "t", LimitKey: fmt.Sprintf("%s%d", prefix, i)}
		}
		if _, err := be.Enqueue(ctx, reqs); err != nil {
			t.Fatal(err)
		}
		got := 0
		for got < n {
			jobs, err := be.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 50, LeaseTTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) == 0 {
				t.Fatalf("claimed %d of %d", got, n)
			}
			for _, j := range jobs {
				if _, err := be.Complete(ctx, []core.Completion{{Lease: j.Lease}}); err != nil {
					t.Fatal(err)
				}
			}
			got += len(jobs)
		}
	}
	drain("old", 200)
	if n := windows(); n != 200 {
		t.Fatalf("%d start windows after 200 keys started, want 200", n)
	}
	clock.Advance(2 * time.Minute)
	for round := range 40 {
		drain(fmt.Sprintf("new%d-", round), 5)
	}
	if n := windows(); n > 200 {
		t.Fatalf("%d start windows left, want the old keys' windows swept (at most the 200 new ones)", n)
	}
}
