package conformance

import (
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testFlowRates: MaxStartsPerSecond and MaxStartsPerSecondPerKey allow at
// most N claims in each one-second window aligned to whole seconds of the
// store's clock. Every claim counts, a wake from a sleep included. The
// suite's clock starts on a whole second.
func testFlowRates(t *testing.T, h Harness) {
	cases(t, h, flowCases(h, map[string]func(e *env){
		"TaskStartsPerSecond":   rateTaskStarts,
		"TaskWindowsAligned":    rateTaskAligned,
		"TaskAcrossQueues":      rateAcrossQueues,
		"KeyStartsPerSecond":    rateKeyStarts,
		"KeyWindowsAligned":     rateKeyAligned,
		"FinishedStartsCount":   rateFinishedCount,
		"WakeCounts":            rateWakeCounts,
		"RateConfigChange":      rateConfigChange,
		"RateAndLimitsTogether": rateWithLimits,
	}))
}

// requireWholeSecond fails unless the suite clock is on a whole second.
func (e *env) requireWholeSecond() {
	e.t.Helper()
	if e.now().Truncate(time.Second) != e.now() {
		e.t.Fatalf("the suite clock %v is not on a whole second", e.now())
	}
}

func rateTaskStarts(e *env) {
	e.requireWholeSecond()
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxStartsPerSecond: 2})
	t := e.enqueueN("q", "t", 5)
	u := e.enqueue(named(req("q", "u"), "u1"), named(req("q", "u"), "u2"), named(req("q", "u"), "u3"))
	e.claimExactly("q", 10, "two starts of t in the first second; u has no rate", t[0], t[1], u[0], u[1], u[2])
	e.claimNone("q", "t's two starts of this second are spent")
	e.advance(999 * time.Millisecond)
	e.claimNone("q", "the same one-second window")
	e.advance(time.Millisecond)
	e.claimExactly("q", 10, "a new window", t[2], t[3])
	e.claimNone("q", "the second window is spent")
	e.advance(time.Second)
	e.claimExactly("q", 10, "a third window", t[4])
}

func rateTaskAligned(e *env) {
	e.requireWholeSecond()
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxStartsPerSecond: 2})
	t := e.enqueueN("q", "t", 6)
	e.advance(600 * time.Millisecond)
	e.claimExactly("q", 1, "first start at .600", t[0])
	e.advance(300 * time.Millisecond)
	e.claimExactly("q", 10, "second start at .900", t[1])
	e.claimNone("q", "two starts in this window")
	// 100 ms later a new whole second begins: a window aligned to whole
	// seconds allows two more, though both starts lie within the last
	// second.
	e.advance(100 * time.Millisecond)
	e.claimExactly("q", 10, "the window of the next whole second", t[2], t[3])
	e.advance(999 * time.Millisecond)
	e.claimNone("q", "the last millisecond of that window")
	e.advance(time.Millisecond)
	e.claimExactly("q", 10, "the window after it", t[4], t[5])
}

func rateAcrossQueues(e *env) {
	e.requireWholeSecond()
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxStartsPerSecond: 2})
	a := e.enqueueN("qa", "t", 2)
	b := e.enqueueN("qb", "t", 2)
	e.claimExactly("qa", 1, "one start in qa", a[0])
	e.claimExactly("qb", 10, "one start left for the task, in qb", b[0])
	e.claimNone("qa", "the task's rate spans queues")
	e.advance(time.Second)
	e.claimExactly("qa", 10, "next window", a[1])
	e.claimExactly("qb", 10, "next window", b[1])
}

func rateKeyStarts(e *env) {
	e.requireWholeSecond()
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxStartsPerSecondPerKey: 1})
	var a, b []core.Job
	for i := range 3 {
		a = append(a, e.enqueueOne(named(lreq("q", "t", "a"), "a"+itoa(i))))
		b = append(b, e.enqueueOne(named(lreq("q", "t", "b"), "b"+itoa(i))))
	}
	none := e.enqueue(named(req("q", "t"), "unkeyed1"), named(req("q", "t"), "unkeyed2"))
	other := e.enqueueOne(named(lreq("q", "u", "a"), "u-a"))
	e.claimExactly("q", 10, "one start per key; unkeyed and other tasks free", a[0], b[0], none[0], none[1], other)
	e.claimNone("q", "each key's start of this second is spent")
	e.advance(500 * time.Millisecond)
	e.claimNone("q", "the same window")
	e.advance(500 * time.Millisecond)
	e.claimExactly("q", 10, "a new window", a[1], b[1])
}

func rateKeyAligned(e *env) {
	e.requireWholeSecond()
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxStartsPerSecondPerKey: 1})
	a := e.enqueue(lreq("q", "t", "a"), lreq("q", "t", "a"), lreq("q", "t", "a"))
	e.advance(900 * time.Millisecond)
	e.claimExactly("q", 10, "a's start at .900", a[0])
	e.advance(100 * time.Millisecond)
	e.claimExactly("q", 10, "a's start in the next whole second", a[1])
	e.advance(999 * time.Millisecond)
	e.claimNone("q", "still that second")
}

func rateFinishedCount(e *env) {
	e.requireWholeSecond()
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxStartsPerSecond: 2, MaxStartsPerSecondPerKey: 1})
	jobs := e.enqueue(req("q", "t"), req("q", "t"), req("q", "t"))
	got := e.claimExactly("q", 10, "two starts", jobs[0], jobs[1])
	e.complete(got[0].Lease, nil)
	e.fail(core.Failure{Lease: got[1].Lease, Error: "boom", RetryAt: e.now()})
	e.claimNone("q", "finished and failed runs still count as starts of this second")
	keyed := e.enqueue(lreq("q2", "k", "a"), lreq("q2", "k", "a"))
	e.putTaskConfig(core.TaskConfig{Task: "k", MaxStartsPerSecondPerKey: 1})
	k := e.claimExactly("q2", 10, "key a's start", keyed[0])
	e.cancel(k[0].ID, "")
	e.claimNone("q2", "a cancelled run still counts as a start")
}

func rateWakeCounts(e *env) {
	e.requireWholeSecond()
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxStartsPerSecond: 1})
	s := e.enqueueOne(named(req("q", "t"), "sleeper"))
	c := e.claimExactly("q", 10, "the first start", s)
	e.sleepJob(c[0].Lease, 500*time.Millisecond)
	e.advance(500 * time.Millisecond)
	e.claimNone("q", "the sleeper is due, but this second's start is spent")
	e.advance(500 * time.Millisecond)
	// In the next second the wake takes the one start: a job behind it
	// in claim order must wait for the second after.
	later := named(req("q", "t"), "later")
	later.Priority = 10
	l := e.enqueueOne(later)
	w := e.claimExactly("q", 10, "the wake takes the new window's start", s)
	requireEq(e.t, w[0].Attempt, 1, "attempt of the woken job")
	e.claimNone("q", "the wake counted as this second's start")
	e.advance(time.Second)
	e.claimExactly("q", 10, "the job behind the wake", l)
}

func rateConfigChange(e *env) {
	e.requireWholeSecond()
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxStartsPerSecond: 1})
	jobs := e.enqueueN("q", "t", 6)
	e.claimExactly("q", 10, "rate 1", jobs[0])
	e.claimNone("q", "rate 1 spent")
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxStartsPerSecond: 3})
	e.claimExactly("q", 10, "raised to 3 within the same second", jobs[1], jobs[2])
	e.putTaskConfig(core.TaskConfig{Task: "t"})
	e.claimExactly("q", 10, "no rate", jobs[3], jobs[4], jobs[5])
}

func rateWithLimits(e *env) {
	e.requireWholeSecond()
	e.putTaskConfig(core.TaskConfig{Task: "t", MaxStartsPerSecond: 3, MaxRunning: 2})
	jobs := e.enqueueN("q", "t", 6)
	got := e.claimExactly("q", 10, "MaxRunning 2 is tighter than the rate 3", jobs[0], jobs[1])
	e.complete(got[0].Lease, nil)
	e.complete(got[1].Lease, nil)
	e.claimExactly("q", 10, "the rate's third start", jobs[2])
	e.claimNone("q", "the rate is spent though a slot is free")
	e.advance(time.Second)
	e.claimExactly("q", 10, "a new window, one slot free", jobs[3])
}
