package conformance

import (
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testFlowLimits: the concurrency limits at claim — TaskConfig.MaxRunning,
// MaxRunningPerKey and QueueConfig.MaxRunning — pass held-back jobs over,
// count the jobs of one claim together, follow config changes at the next
// claim, and are freed by every transition that ends a run.
func testFlowLimits(t *testing.T, h Harness) {
	cs := map[string]func(e *env){
		"TaskMaxRunning":           limitTask,
		"TaskPassOver":             limitTaskPassOver,
		"KeyMaxRunning":            limitKey,
		"KeyPerTask":               limitKeyPerTask,
		"KeyAcrossQueues":          limitKeyAcrossQueues,
		"QueueMaxRunning":          limitQueue,
		"ClaimCountsTogether":      limitClaimTogether,
		"ConfigChangeNextClaim":    limitConfigChange,
		"QueueConfigChange":        limitQueueConfigChange,
		"AllLimitsTogether":        limitAllTogether,
		"FreedByComplete":          func(e *env) { limitFreed(e, freeComplete) },
		"FreedByFail":              func(e *env) { limitFreed(e, freeFail) },
		"FreedByRetryRequeue":      func(e *env) { limitFreed(e, freeRequeue) },
		"FreedBySleep":             func(e *env) { limitFreed(e, freeSleep) },
		"FreedByCancel":            func(e *env) { limitFreed(e, freeCancel) },
		"FreedByRescue":            func(e *env) { limitFreed(e, freeRescue) },
		"ExpiredLeaseStillCounts":  limitExpiredCounts,
		"WakeCountsAgainstLimit":   limitWake,
		"ManualRetryCountsAtClaim": limitManualRetry,
		"MaxDelayAtClaim":          limitDeadlineAtClaim,
	}
	if h.Capabilities.Delete {
		cs["FreedByDelete"] = func(e *env) { limitFreed(e, freeDelete) }
	}
	cases(t, h, flowCases(h, cs))
}

func limitTask(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxRunning: 2})
	q := e.enqueue(named(req("q", "t"), "t1"), named(req("q", "t"), "t2"), named(req("q", "t"), "t3"))
	q2 := e.enqueue(named(req("q2", "t"), "q2-t1"), named(req("q2", "t"), "q2-t2"))
	c := e.claimExactly("q", 10, "two of t under MaxRunning 2", q[0], q[1])
	e.claimNone("q2", "the task's limit spans queues and t runs twice in q")
	requireEq(e.t, e.running(core.JobFilter{Task: "t"}), 2, "running jobs of t")

	u := e.enqueue(named(req("q2", "u"), "u1"), named(req("q2", "u"), "u2"))
	e.claimExactly("q2", 10, "another task is not limited by t's config", u...)

	e.complete(c[0].Lease, nil)
	e.claimExactly("q2", 10, "one slot freed by a completion, first in q2's order", q2[0])
	e.claimNone("q", "t is at its limit again")
	e.claimNone("q2", "t is at its limit again")
}

func limitTaskPassOver(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxRunning: 1})
	lo := func(r core.EnqueueRequest) core.EnqueueRequest { r.Priority = -5; return r }
	t1 := e.enqueueOne(named(lo(req("q", "t")), "t1"))
	t2 := e.enqueueOne(named(lo(req("q", "t")), "t2"))
	u1 := e.enqueueOne(named(req("q", "u"), "u1"))
	t3 := e.enqueueOne(named(req("q", "t"), "t3"))
	u2 := e.enqueueOne(named(req("q", "u"), "u2"))
	c1 := e.claimExactly("q", 1, "the first job in claim order", t1)
	// t2 and t3 come before and between u1 and u2 in claim order, but t is
	// saturated: the claim passes them over instead of stopping.
	e.claimExactly("q", 1, "the next eligible job after the held-back t2", u1)
	e.claimExactly("q", 10, "the rest without t", u2)
	e.complete(c1[0].Lease, nil)
	e.claimExactly("q", 10, "t's next job in claim order once a slot frees", t2)
	e.requireState(t3.ID, core.StateQueued)
}

func limitKey(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxRunningPerKey: 2})
	var a, b, none []core.Job
	for i := range 3 {
		a = append(a, e.enqueueOne(named(lreq("q", "t", "a"), "a"+itoa(i))))
		b = append(b, e.enqueueOne(named(lreq("q", "t", "b"), "b"+itoa(i))))
		none = append(none, e.enqueueOne(named(req("q", "t"), "unkeyed"+itoa(i))))
	}
	got := e.claimExactly("q", 100, "two per key, every unkeyed job", a[0], b[0], none[0], a[1], b[1], none[1], none[2])
	e.claimNone("q", "both keys are at their limit")
	requireEq(e.t, len(e.runningByKey("t", 0)), 2, "keys with running jobs")

	l, _ := byID(got, a[0].ID)
	e.complete(l.Lease, nil)
	e.claimExactly("q", 100, "a's third job once an a slot frees", a[2])
	e.claimNone("q", "both keys are at their limit again")
	more := e.enqueue(named(req("q", "t"), "unkeyed-late"), named(lreq("q", "t", "c"), "c0"))
	e.claimExactly("q", 100, "an unkeyed job and a fresh key", more...)
}

func limitKeyPerTask(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxRunningPerKey: 1})
	t1 := e.enqueueOne(named(lreq("q", "t", "a"), "t-a1"))
	e.enqueueOne(named(lreq("q", "t", "a"), "t-a2"))
	u := e.enqueue(named(lreq("q", "u", "a"), "u-a1"), named(lreq("q", "u", "a"), "u-a2"))
	e.claimExactly("q", 10, "t's key a once; u has no per-key limit", t1, u[0], u[1])
	requireKeyCounts(e.t, e.runningByKey("t", 0), []core.KeyCount{{Key: "a", Running: 1}}, "RunningByKey(t)")
	requireKeyCounts(e.t, e.runningByKey("u", 0), []core.KeyCount{{Key: "a", Running: 2}}, "RunningByKey(u)")
}

func limitKeyAcrossQueues(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxRunningPerKey: 1})
	a := e.enqueueOne(named(lreq("q", "t", "a"), "q-a"))
	e.enqueueOne(named(lreq("q2", "t", "a"), "q2-a"))
	b := e.enqueueOne(named(lreq("q2", "t", "b"), "q2-b"))
	c := e.claimExactly("q", 10, "key a in q", a)
	e.claimExactly("q2", 10, "key a is running in q; key b is free", b)
	e.complete(c[0].Lease, nil)
	requireEq(e.t, len(e.claim("q2", 10)), 1, "key a in q2 once q's a finished")
}

func limitQueue(e *env) {
	e.putQueueConfig(core.QueueConfig{Queue: "q", MaxRunning: 2})
	jobs := e.enqueue(named(req("q", "t"), "t1"), named(req("q", "u"), "u1"), named(lreq("q", "t", "a"), "t-a"), named(req("q", "v"), "v1"))
	other := e.enqueue(named(req("q2", "t"), "q2-1"), named(req("q2", "t"), "q2-2"), named(req("q2", "t"), "q2-3"))
	got := e.claimExactly("q", 10, "two of any task under the queue's MaxRunning 2", jobs[0], jobs[1])
	e.claimNone("q", "the queue is at its limit")
	e.claimExactly("q2", 10, "another queue is not limited", other...)
	requireEq(e.t, e.running(core.JobFilter{Queue: "q"}), 2, "running jobs of q")
	e.complete(got[1].Lease, nil)
	e.claimExactly("q", 10, "one freed slot, next in order", jobs[2])
	e.claimNone("q", "the queue is at its limit again")
}

func limitClaimTogether(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxRunning: 3})
	e.putTaskConfig(core.TaskConfig{Task: "k", MaxRunningPerKey: 2})
	e.putQueueConfig(core.QueueConfig{Queue: "qq", MaxRunning: 4})
	e.enqueueN("qt", "t", 6)
	for range 6 {
		e.enqueueOne(lreq("qk", "k", "a"))
	}
	e.enqueueN("qq", "x", 6)
	requireEq(e.t, len(e.claim("qt", 10)), 3, "one claim of 10 under a task limit of 3")
	requireEq(e.t, len(e.claim("qk", 10)), 2, "one claim of 10 under a key limit of 2")
	requireEq(e.t, len(e.claim("qq", 10)), 4, "one claim of 10 under a queue limit of 4")
	for _, q := range []string{"qt", "qk", "qq"} {
		e.claimNone(q, "the claim before took every slot")
	}
}

func limitConfigChange(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxRunning: 1})
	jobs := e.enqueueN("q", "t", 6)
	first := e.claimExactly("q", 10, "MaxRunning 1", jobs[0])
	e.claimNone("q", "MaxRunning 1 with one running")
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxRunning: 3})
	second := e.claimExactly("q", 10, "raised to 3 at the next claim", jobs[1], jobs[2])
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxRunning: 2})
	e.claimNone("q", "lowered to 2 with three running")
	e.complete(first[0].Lease, nil)
	e.claimNone("q", "lowered to 2 with two running")
	e.complete(second[0].Lease, nil)
	e.claimExactly("q", 10, "a slot under the lowered limit", jobs[3])
	e.putTaskConfig(core.TaskConfig{Task: "t"})
	e.claimExactly("q", 10, "0 is no limit", jobs[4], jobs[5])

	// The per-key limit follows its config the same way.
	e.putTaskConfig(core.TaskConfig{Task: "k", MaxRunningPerKey: 1})
	keyed := e.enqueue(lreq("qk", "k", "a"), lreq("qk", "k", "a"), lreq("qk", "k", "a"))
	e.claimExactly("qk", 10, "MaxRunningPerKey 1", keyed[0])
	e.putTaskConfig(core.TaskConfig{Task: "k", MaxRunningPerKey: 2})
	e.claimExactly("qk", 10, "raised to 2", keyed[1])
	e.putTaskConfig(core.TaskConfig{Task: "k"})
	e.claimExactly("qk", 10, "per-key limit removed", keyed[2])
}

func limitQueueConfigChange(e *env) {
	e.putQueueConfig(core.QueueConfig{Queue: "q", MaxRunning: 1})
	jobs := e.enqueueN("q", "t", 4)
	e.claimExactly("q", 10, "queue MaxRunning 1", jobs[0])
	e.putQueueConfig(core.QueueConfig{Queue: "q", MaxRunning: 2})
	e.claimExactly("q", 10, "raised to 2", jobs[1])
	e.putQueueConfig(core.QueueConfig{Queue: "q"})
	e.claimExactly("q", 10, "queue limit removed", jobs[2], jobs[3])
}

func limitAllTogether(e *env) {
	// A job must fit every limit that applies to it: the tightest wins,
	// and a job held by one limit does not use up another's slot.
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxRunning: 3, MaxRunningPerKey: 1})
	e.putQueueConfig(core.QueueConfig{Queue: "q", MaxRunning: 4})
	a := e.enqueue(named(lreq("q", "t", "a"), "a1"), named(lreq("q", "t", "a"), "a2"))
	b := e.enqueueOne(named(lreq("q", "t", "b"), "b1"))
	n := e.enqueue(named(req("q", "t"), "t1"), named(req("q", "t"), "t2"))
	u := e.enqueue(named(req("q", "u"), "u1"), named(req("q", "u"), "u2"))
	// a1 (key a), b1 (key b), t1 (task t's third) — a2 held by its key,
	// t2 by the task limit — then u1 fills the queue's four slots.
	e.claimExactly("q", 10, "every limit at once", a[0], b, n[0], u[0])
	e.claimNone("q", "queue, task and key a are all at their limits")
}

// freeing is a transition that ends a running job's run.
type freeing struct {
	name string
	// ttl is the lease the job is claimed with.
	ttl time.Duration
	// free ends j's run; it returns true when j itself is claimable again
	// at once (queued, due now).
	free func(e *env, j core.Job) bool
}

var (
	freeComplete = freeing{"complete", leaseTTL, func(e *env, j core.Job) bool {
		e.complete(j.Lease, nil)
		return false
	}}
	freeFail = freeing{"terminal fail", leaseTTL, func(e *env, j core.Job) bool {
		requireEq(e.t, e.fail(core.Failure{Lease: j.Lease, Error: "boom", Terminal: true}), core.StateFailed, "state after a terminal fail")
		return false
	}}
	freeRequeue = freeing{"fail with a retry", leaseTTL, func(e *env, j core.Job) bool {
		requireEq(e.t, e.fail(core.Failure{Lease: j.Lease, Error: "again", RetryAt: e.now()}), core.StateQueued, "state after a retryable fail")
		return true
	}}
	freeSleep = freeing{"sleep", leaseTTL, func(e *env, j core.Job) bool {
		e.sleepJob(j.Lease, time.Hour)
		return false
	}}
	freeCancel = freeing{"cancel", leaseTTL, func(e *env, j core.Job) bool {
		e.cancel(j.ID, "stop")
		return false
	}}
	freeRescue = freeing{"rescue", time.Second, func(e *env, j core.Job) bool {
		e.advance(2 * time.Second)
		e.claimNone(j.Queue, "a running job with an expired lease still counts until rescue")
		requireEq(e.t, e.rescue(100).Requeued, 1, "jobs requeued by rescue")
		return true
	}}
	freeDelete = freeing{"forced delete", leaseTTL, func(e *env, j core.Job) bool {
		e.deleteJob(j.ID, true)
		return false
	}}
)

// limitFreed checks that tr frees a slot of each kind of limit: task,
// per key and queue, each at 1 and saturated by one running job.
func limitFreed(e *env, tr freeing) {
	kinds := []struct {
		name, queue string
		req         core.EnqueueRequest
	}{
		{"task", "q-task", req("q-task", "t-task")},
		{"key", "q-key", lreq("q-key", "t-key", "k")},
		{"queue", "q-queue", req("q-queue", "t-queue")},
	}
	e.putTaskConfig(core.TaskConfig{Task: "t-task", MaxRunning: 1})
	e.putTaskConfig(core.TaskConfig{Task: "t-key", MaxRunningPerKey: 1})
	e.putQueueConfig(core.QueueConfig{Queue: "q-queue", MaxRunning: 1})
	for _, k := range kinds {
		first := e.enqueueOne(named(k.req, k.name+"-1"))
		second := e.enqueueOne(named(k.req, k.name+"-2"))
		c := e.claimAs(k.queue, "w1", 10, tr.ttl)
		if len(c) != 1 || c[0].ID != first.ID {
			e.t.Fatalf("%s limit 1: claim returned %s, want only %s", k.name, describe(c), first.ID)
		}
		e.claimNone(k.queue, k.name+" limit 1 with one running")
		again := tr.free(e, c[0])
		got := e.claim(k.queue, 10)
		if len(got) != 1 {
			e.t.Fatalf("%s limit 1 after %s: claim returned %s, want one job", k.name, tr.name, describe(got))
		}
		if !again && got[0].ID != second.ID {
			e.t.Fatalf("%s limit 1 after %s: claimed %s, want %s", k.name, tr.name, got[0].ID, second.ID)
		}
		e.claimNone(k.queue, k.name+" limit 1 is taken again after "+tr.name)
		e.complete(got[0].Lease, nil)
	}
}

func limitExpiredCounts(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxRunningPerKey: 1})
	e.enqueue(lreq("q", "t", "a"), lreq("q", "t", "a"))
	c := e.claimAs("q", "w1", 10, time.Second)
	requireEq(e.t, len(c), 1, "claimed under key limit 1")
	e.advance(time.Minute)
	e.claimNone("q", "the expired lease of a still-running job holds its slot")
	requireKeyCounts(e.t, e.runningByKey("t", 0), []core.KeyCount{{Key: "a", Running: 1}}, "RunningByKey with an expired lease")
	e.rescue(10)
	requireEq(e.t, len(e.claim("q", 10)), 1, "claimed after rescue, under key limit 1")
	e.claimNone("q", "the key's one slot is taken again")
}

func limitWake(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxRunning: 1})
	jobs := e.enqueue(named(req("q", "t"), "sleeper"), named(req("q", "t"), "other"))
	s := e.claimExactly("q", 10, "MaxRunning 1", jobs[0])
	e.sleepJob(s[0].Lease, time.Minute)
	o := e.claimExactly("q", 10, "a sleeping job holds no slot", jobs[1])
	e.advance(time.Minute)
	e.claimNone("q", "the sleeper is due but the other job holds the only slot")
	e.complete(o[0].Lease, nil)
	w := e.claimExactly("q", 10, "the wake once the slot frees", jobs[0])
	requireEq(e.t, w[0].Attempt, 1, "attempt of a woken job")
}

func limitManualRetry(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxRunning: 1})
	jobs := e.enqueue(named(req("q", "t"), "failer"), named(req("q", "t"), "runner"))
	f := e.claimExactly("q", 10, "MaxRunning 1", jobs[0])
	e.fail(core.Failure{Lease: f[0].Lease, Error: "boom", Terminal: true})
	r := e.claimExactly("q", 10, "the next job after a terminal fail", jobs[1])
	e.retry(jobs[0].ID)
	e.claimNone("q", "a retried job waits for the slot like any other")
	e.complete(r[0].Lease, nil)
	e.claimExactly("q", 10, "the retried job", jobs[0])
}

// requireKeyCounts fails unless got equals want exactly, in order.
func requireKeyCounts(t testing.TB, got, want []core.KeyCount, what string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
}

// limitDeadlineAtClaim: a claim cancels the due jobs past their deadline
// while a limit is stored, as it does without one.
func limitDeadlineAtClaim(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxRunningPerKey: 5})
	deadlineDelayClaim(e)
}
