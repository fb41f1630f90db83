package conformance

import (
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testTasks: core.TaskLister — every task with jobs or a config, with
// counts.
func testTasks(t *testing.T, h Harness) {
	if !h.Capabilities.Tasks {
		cases(t, h, map[string]func(e *env){"Undeclared": tasksUndeclared})
		return
	}
	cases(t, h, map[string]func(e *env){
		"Empty":        tasksEmpty,
		"Counts":       tasksCounts,
		"ConfigOnly":   tasksConfigOnly,
		"AfterCleanup": tasksAfterCleanup,
	})
}

func (e *env) listTasks() []core.TaskInfo {
	e.t.Helper()
	ts, err := e.taskLister().ListTasks(e.ctx)
	if err != nil {
		e.t.Fatalf("ListTasks: %v", err)
	}
	for i := range ts {
		ts[i].Counts = nonZero(ts[i].Counts)
	}
	return ts
}

// requireTasks compares ListTasks with want (zero counts dropped).
func (e *env) requireTasks(want []core.TaskInfo, what string) {
	e.t.Helper()
	got := e.listTasks()
	for i := range want {
		want[i].Counts = nonZero(want[i].Counts)
	}
	if d := diff(want, got); d != "" {
		e.t.Fatalf("ListTasks %s: %s\ngot  %+v\nwant %+v", what, d, got, want)
	}
}

func tasksEmpty(e *env) {
	e.requireTasks(nil, "of an empty store")
	e.putQueueConfig(core.QueueConfig{Queue: "q", Paused: true})
	e.requireTasks(nil, "with only a queue config")
}

func tasksCounts(e *env) {
	e.enqueueN("q1", "beta", 3)
	e.enqueueN("q2", "beta", 2)
	e.enqueueN("q1", "alpha", 2)
	a := e.claimOne("q1") // beta: the oldest of q1
	e.complete(a.Lease, nil)
	b := e.claimOne("q2")
	e.fail(core.Failure{Lease: b.Lease, Error: "x", Terminal: true})
	e.claimOne("q2")
	e.putTaskConfig(core.TaskConfig{Task: "beta", MaxInFlight: 100})
	e.requireTasks([]core.TaskInfo{
		{Name: "alpha", Counts: map[core.JobState]int64{core.StateQueued: 2}},
		{Name: "beta", HasConfig: true, Counts: map[core.JobState]int64{
			core.StateQueued: 2, core.StateSucceeded: 1, core.StateFailed: 1, core.StateRunning: 1,
		}},
	}, "with jobs in two queues")
}

func tasksConfigOnly(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "zeta"})
	e.putTaskConfig(core.TaskConfig{Task: "Alpha", MaxEnqueuePerSecond: 5})
	e.enqueueN("q", "mid", 1)
	e.requireTasks([]core.TaskInfo{
		{Name: "Alpha", HasConfig: true},
		{Name: "mid", Counts: map[core.JobState]int64{core.StateQueued: 1}},
		{Name: "zeta", HasConfig: true},
	}, "with config-only tasks")
}

func tasksAfterCleanup(e *env) {
	for _, task := range []string{"gone", "configured", "kept"} {
		j := e.enqueueClaim(req("q", task))
		e.complete(j.Lease, nil)
	}
	e.enqueueN("q", "kept", 1)
	e.putTaskConfig(core.TaskConfig{Task: "configured"})
	e.advance(time.Minute)
	requireEq(e.t, e.cleanup(core.CleanupRequest{FinishedBefore: e.now(), Limit: 10}), 3, "deleted")
	e.requireTasks([]core.TaskInfo{
		{Name: "configured", HasConfig: true},
		{Name: "kept", Counts: map[core.JobState]int64{core.StateQueued: 1}},
	}, "after cleanup deleted every job of two tasks")
}

func tasksUndeclared(e *env) {
	e.enqueueOne(req("q", "t"))
	tl, ok := e.b.(core.TaskLister)
	if !ok {
		return
	}
	_, err := tl.ListTasks(e.ctx)
	e.requireUnsupported(err, "ListTasks")
}
