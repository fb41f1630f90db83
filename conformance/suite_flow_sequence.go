package conformance

import (
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testFlowSequence: the jobs of one queue that share a SequenceKey run one
// at a time in job id order. A failed job releases its sequence, or holds
// it until retried or deleted when its task's HoldSequenceOnFailure was set
// at the failure; a cancelled job always releases it. Other keys and
// unkeyed jobs are never delayed.
func testFlowSequence(t *testing.T, h Harness) {
	cs := map[string]func(e *env){
		"IDOrder":                 seqIDOrder,
		"OneAtATime":              seqOneAtATime,
		"OthersNotDelayed":        seqOthersNotDelayed,
		"PerQueue":                seqPerQueue,
		"FutureHeadWaits":         seqFutureHead,
		"ReleaseOnFailure":        seqReleaseOnFailure,
		"HoldOnFailure":           seqHoldOnFailure,
		"HoldReadAtFailure":       seqHoldReadAtFailure,
		"HoldRetryFailsAgain":     seqHoldRetryFailsAgain,
		"RetryOfReleasedJob":      seqRetryReleased,
		"RetryRequeueKeepsHead":   seqRetryRequeue,
		"CancelReleases":          seqCancelReleases,
		"CancelReleasesHeld":      seqCancelReleasesHeld,
		"RescueKeepsOrder":        seqRescueKeepsOrder,
		"SleepingMemberHolds":     seqSleepHolds,
		"JoinsAfterTerminal":      seqJoinsAfterTerminal,
		"WithLimitsAndPriorities": seqWithLimits,
	}
	if h.Capabilities.Delete {
		cs["DeleteReleases"] = seqDeleteReleases
		cs["DeleteReleasesHeld"] = seqDeleteReleasesHeld
	}
	cases(t, h, flowCases(h, cs))
}

// seqJobs enqueues n jobs of sequence seq in queue q, task t, named
// seq+index, one call each so that their ids ascend.
func (e *env) seqJobs(q, seq string, n int) []core.Job {
	e.t.Helper()
	out := make([]core.Job, n)
	for i := range out {
		out[i] = e.enqueueOne(named(sreq(q, "t", seq), seq+itoa(i)))
	}
	return out
}

// runSeq claims the next job of q, requires it to be want, and completes it.
func (e *env) runSeq(q string, want core.Job, what string) {
	e.t.Helper()
	c := e.claimExactly(q, 10, what, want)
	e.complete(c[0].Lease, nil)
}

func seqIDOrder(e *env) {
	// Priority and run-at would order them s2, s1, s0; the sequence runs
	// them in id order all the same.
	var s []core.Job
	for i, prio := range []int{5, 0, -5} {
		r := named(sreq("q", "t", "s"), "s"+itoa(i))
		r.Priority = prio
		s = append(s, e.enqueueOne(r))
	}
	for i, j := range s {
		e.runSeq("q", j, "the sequence's job "+itoa(i))
	}
	e.claimNone("q", "the sequence ran through")
}

func seqOneAtATime(e *env) {
	s := e.seqJobs("q", "s", 3)
	c := e.claimExactly("q", 10, "one job of a sequence per claim", s[0])
	e.claimNone("q", "the head runs")
	e.complete(c[0].Lease, nil)
	c = e.claimExactly("q", 10, "the next one", s[1])
	e.claimNone("q", "the next one runs")
	e.complete(c[0].Lease, nil)
	e.runSeq("q", s[2], "the last one")
}

func seqOthersNotDelayed(e *env) {
	a := e.seqJobs("q", "a", 2)
	b := e.seqJobs("q", "b", 2)
	n := e.enqueue(named(req("q", "t"), "unkeyed1"), named(req("q", "t"), "unkeyed2"))
	other := e.enqueueOne(named(sreq("q", "u", "a"), "u-a")) // another task, same key: one sequence per queue
	e.claimExactly("q", 10, "the head of each sequence and every unkeyed job", a[0], b[0], n[0], n[1])
	e.claimNone("q", "both heads run")
	e.requireState(other.ID, core.StateQueued)
}

func seqPerQueue(e *env) {
	a := e.seqJobs("q", "s", 2)
	b := e.seqJobs("q2", "s", 2)
	e.claimExactly("q", 10, "q's sequence s", a[0])
	e.claimExactly("q2", 10, "q2's sequence s is another sequence", b[0])
}

func seqFutureHead(e *env) {
	r := named(sreq("q", "t", "s"), "s0-later")
	r.RunAt = e.now().Add(time.Minute)
	s0 := e.enqueueOne(r)
	s1 := e.enqueueOne(named(sreq("q", "t", "s"), "s1-now"))
	e.claimNone("q", "the head is not due and s1 may not pass it")
	e.advance(time.Minute)
	e.runSeq("q", s0, "the head once due")
	e.runSeq("q", s1, "then s1")
}

func seqReleaseOnFailure(e *env) {
	s := e.seqJobs("q", "s", 3)
	c := e.claimExactly("q", 10, "head", s[0])
	requireEq(e.t, e.fail(core.Failure{Lease: c[0].Lease, Error: "boom", Terminal: true}), core.StateFailed, "state")
	e.runSeq("q", s[1], "a failed job releases its sequence by default")
	e.runSeq("q", s[2], "and the rest follows")
	// Spent attempts end the same way as a terminal failure.
	r := named(sreq("q", "t", "x"), "x0")
	r.MaxAttempts = 1
	x0 := e.enqueueOne(r)
	x1 := e.enqueueOne(named(sreq("q", "t", "x"), "x1"))
	c = e.claimExactly("q", 10, "x head", x0)
	requireEq(e.t, e.fail(core.Failure{Lease: c[0].Lease, Error: "boom"}), core.StateFailed, "state with attempts spent")
	e.runSeq("q", x1, "released after the last attempt failed")
}

func seqHoldOnFailure(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", HoldSequenceOnFailure: true})
	s := e.seqJobs("q", "s", 3)
	other := e.seqJobs("q", "o", 1)
	c := e.claimExactly("q", 10, "the heads", s[0], other[0])
	head, _ := byID(c, s[0].ID)
	o, _ := byID(c, other[0].ID)
	e.fail(core.Failure{Lease: head.Lease, Error: "boom", Terminal: true})
	e.complete(o.Lease, nil)
	free := e.enqueueOne(named(req("q", "t"), "unkeyed"))
	e.claimExactly("q", 10, "a held sequence delays only itself", free)
	e.claimNone("q", "the failed head holds its sequence")
	e.advance(time.Hour)
	e.claimNone("q", "it holds until retried or deleted, however long")
	e.retry(s[0].ID)
	e.runSeq("q", s[0], "the retried head runs next")
	e.runSeq("q", s[1], "then the rest")
	e.runSeq("q", s[2], "then the rest")
}

func seqHoldReadAtFailure(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", HoldSequenceOnFailure: true})
	a := e.seqJobs("q", "a", 2)
	c := e.claimExactly("q", 10, "a's head", a[0])
	e.fail(core.Failure{Lease: c[0].Lease, Error: "boom", Terminal: true})
	e.putTaskConfig(core.TaskConfig{Task: "t"})
	e.claimNone("q", "the hold was decided at the failure; a later config change does not release it")

	b := e.seqJobs("q", "b", 2)
	c = e.claimExactly("q", 10, "b's head", b[0])
	e.fail(core.Failure{Lease: c[0].Lease, Error: "boom", Terminal: true})
	e.putTaskConfig(core.TaskConfig{Task: "t", HoldSequenceOnFailure: true})
	e.runSeq("q", b[1], "b's head failed without the hold; turning it on later holds nothing")
	e.claimNone("q", "a is still held")
}

func seqHoldRetryFailsAgain(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", HoldSequenceOnFailure: true})
	s := e.seqJobs("q", "s", 2)
	c := e.claimExactly("q", 10, "head", s[0])
	e.fail(core.Failure{Lease: c[0].Lease, Error: "boom", Terminal: true})
	e.retry(s[0].ID)
	c = e.claimExactly("q", 10, "the retried head", s[0])
	e.fail(core.Failure{Lease: c[0].Lease, Error: "boom again", Terminal: true})
	e.claimNone("q", "a second failure holds again")
	e.retry(s[0].ID)
	e.runSeq("q", s[0], "retried again")
	e.runSeq("q", s[1], "released by the success")
}

func seqRetryReleased(e *env) {
	s := e.seqJobs("q", "s", 3)
	c := e.claimExactly("q", 10, "head", s[0])
	e.fail(core.Failure{Lease: c[0].Lease, Error: "boom", Terminal: true})
	c1 := e.claimExactly("q", 10, "released: s1 runs", s[1])
	// s0 is retried while s1 runs: s0 is not terminal any more and has
	// the smallest id, so it runs after s1 and before s2.
	e.retry(s[0].ID)
	e.claimNone("q", "s1 runs; s0 waits for it, s2 waits for s0")
	e.complete(c1[0].Lease, nil)
	e.runSeq("q", s[0], "the retried job with the smallest id")
	e.runSeq("q", s[2], "then s2")
}

func seqRetryRequeue(e *env) {
	s := e.seqJobs("q", "s", 2)
	c := e.claimExactly("q", 10, "head", s[0])
	requireEq(e.t, e.fail(core.Failure{Lease: c[0].Lease, Error: "again", RetryAt: e.now().Add(time.Minute)}), core.StateQueued, "state")
	e.claimNone("q", "the head waits for its retry; s1 may not pass it")
	e.advance(time.Minute)
	e.runSeq("q", s[0], "the head's retry")
	e.runSeq("q", s[1], "then s1")
}

func seqCancelReleases(e *env) {
	s := e.seqJobs("q", "s", 4)
	e.cancel(s[0].ID, "queued")
	c := e.claimExactly("q", 10, "a cancelled queued head releases", s[1])
	e.cancel(c[0].ID, "running")
	c = e.claimExactly("q", 10, "a cancelled running job releases", s[2])
	e.sleepJob(c[0].Lease, time.Hour)
	e.claimNone("q", "a sleeping member holds the sequence")
	e.cancel(s[2].ID, "sleeping")
	e.runSeq("q", s[3], "a cancelled sleeping job releases")
}

func seqCancelReleasesHeld(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", HoldSequenceOnFailure: true})
	s := e.seqJobs("q", "s", 3)
	c := e.claimExactly("q", 10, "head", s[0])
	e.cancel(c[0].ID, "stop")
	c = e.claimExactly("q", 10, "cancel releases even with the hold", s[1])
	e.fail(core.Failure{Lease: c[0].Lease, Error: "boom", Terminal: true})
	e.claimNone("q", "s1's failure holds")
	// The failed holder is not cancellable (it is terminal); retrying it
	// and then cancelling it releases the sequence.
	e.retry(s[1].ID)
	e.cancel(s[1].ID, "give up")
	e.runSeq("q", s[2], "a cancelled retry releases the hold")
}

func seqDeleteReleases(e *env) {
	s := e.seqJobs("q", "s", 3)
	e.deleteJob(s[0].ID, false)
	c := e.claimExactly("q", 10, "deleting the queued head releases", s[1])
	e.deleteJob(c[0].ID, true)
	e.runSeq("q", s[2], "a forced delete of the running job releases")
}

func seqDeleteReleasesHeld(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "t", HoldSequenceOnFailure: true})
	s := e.seqJobs("q", "s", 2)
	c := e.claimExactly("q", 10, "head", s[0])
	e.fail(core.Failure{Lease: c[0].Lease, Error: "boom", Terminal: true})
	e.claimNone("q", "held")
	e.deleteJob(s[0].ID, false)
	e.runSeq("q", s[1], "deleting the failed holder releases")
}

func seqRescueKeepsOrder(e *env) {
	s := e.seqJobs("q", "s", 2)
	c := e.claimAs("q", "w1", 10, time.Second)
	if len(c) != 1 || c[0].ID != s[0].ID {
		e.t.Fatalf("claim returned %s, want the head %s", describe(c), s[0].ID)
	}
	e.advance(time.Minute)
	e.claimNone("q", "the head's lease expired but it still runs until rescue")
	requireEq(e.t, e.rescue(10).Requeued, 1, "requeued by rescue")
	// The rescued head's RunAt is now, after s1's: the sequence still
	// runs it first.
	c = e.claimExactly("q", 10, "the rescued head before s1", s[0])
	requireEq(e.t, c[0].Attempt, 2, "attempt after a rescue")
	e.complete(c[0].Lease, nil)
	e.runSeq("q", s[1], "then s1")
}

func seqSleepHolds(e *env) {
	s := e.seqJobs("q", "s", 2)
	o := e.seqJobs("q", "o", 1)
	c := e.claimExactly("q", 10, "heads", s[0], o[0])
	sl, _ := byID(c, s[0].ID)
	e.sleepJob(sl.Lease, time.Hour)
	e.claimNone("q", "a sleeping member holds its sequence")
	e.advance(time.Hour)
	e.runSeq("q", s[0], "the sleeper wakes first")
	e.runSeq("q", s[1], "then s1")
}

func seqJoinsAfterTerminal(e *env) {
	s := e.seqJobs("q", "s", 1)
	e.runSeq("q", s[0], "head")
	late := e.enqueueOne(named(sreq("q", "t", "s"), "late"))
	e.runSeq("q", late, "a job joining a sequence whose jobs are terminal runs at once")
}

func seqWithLimits(e *env) {
	// A sequence's head that a concurrency limit holds back is passed
	// over; the sequence's next job does not jump ahead of it.
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxRunningPerKey: 1})
	busy := e.enqueueOne(named(lreq("q", "t", "k"), "busy"))
	b := e.claimExactly("q", 10, "key k", busy)
	r0 := named(sreq("q", "t", "s"), "s0-keyed")
	r0.LimitKey = "k"
	s0 := e.enqueueOne(r0)
	r1 := named(sreq("q", "u", "s"), "s1-other-task")
	r1.Priority = -10
	s1 := e.enqueueOne(r1)
	free := e.enqueueOne(named(req("q", "u"), "free"))
	e.claimExactly("q", 10, "s0 waits for key k, s1 for s0; the rest runs", free)
	e.complete(b[0].Lease, nil)
	e.runSeq("q", s0, "s0 once key k frees")
	e.runSeq("q", s1, "then s1")
}
