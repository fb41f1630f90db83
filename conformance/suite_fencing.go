package conformance

import (
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// fencedCall makes one fenced mutation with lease l and returns its error.
type fencedCall func(e *env, l core.Lease) error

// fencedCalls are the fenced methods of core.QueueBackend.
var fencedCalls = map[string]fencedCall{
	"Heartbeat": func(e *env, l core.Lease) error {
		_, err := e.b.Heartbeat(e.ctx, l, time.Hour)
		return err
	},
	"Complete": func(e *env, l core.Lease) error {
		errs, err := e.b.Complete(e.ctx, []core.Completion{{Lease: l, Result: []byte("stale")}})
		if err != nil {
			return err
		}
		if len(errs) != 1 {
			e.t.Fatalf("Complete of one item returned %d item errors", len(errs))
		}
		return errs[0]
	},
	"Fail": func(e *env, l core.Lease) error {
		_, err := e.b.Fail(e.ctx, core.Failure{Lease: l, Error: "stale", RetryAt: e.now().Add(time.Hour)})
		return err
	},
	"FailTerminal": func(e *env, l core.Lease) error {
		_, err := e.b.Fail(e.ctx, core.Failure{Lease: l, Error: "stale", Terminal: true})
		return err
	},
	"Sleep": func(e *env, l core.Lease) error {
		return e.b.Sleep(e.ctx, l, e.now().Add(time.Hour))
	},
	"SaveCheckpoint": func(e *env, l core.Lease) error {
		if _, err := e.b.SaveCheckpoint(e.ctx, l, "s1", []byte("stale")); err == nil {
			return nil
		}
		_, err := e.b.SaveCheckpoint(e.ctx, l, "s2", []byte("stale"))
		return err
	},
}

// fencingTrigger supersedes lease old of job j. It returns the lease now
// holding the job, if any, which must keep working after the stale call.
type fencingTrigger func(e *env, j core.Job) (current core.Lease, ok bool)

var fencingTriggers = map[string]fencingTrigger{
	// AfterRescue: the lease expired, rescue requeued the job and another
	// worker claimed it again.
	"AfterRescue": func(e *env, j core.Job) (core.Lease, bool) {
		e.advance(leaseTTL)
		if r := e.rescue(10); r.Requeued != 1 {
			e.t.Fatalf("Rescue = %+v, want 1 requeued", r)
		}
		c := e.claimAs("q", "w2", 1, leaseTTL)
		if len(c) != 1 || c[0].ID != j.ID {
			e.t.Fatal("the rescued job was not claimed again")
		}
		return c[0].Lease, true
	},
	// AfterRescueQueued: rescued and not claimed yet.
	"AfterRescueQueued": func(e *env, j core.Job) (core.Lease, bool) {
		e.advance(leaseTTL)
		if r := e.rescue(10); r.Requeued != 1 {
			e.t.Fatalf("Rescue = %+v, want 1 requeued", r)
		}
		return core.Lease{}, false
	},
	// AfterCancel: the running job was cancelled.
	"AfterCancel": func(e *env, j core.Job) (core.Lease, bool) {
		e.cancel(j.ID, "stop")
		return core.Lease{}, false
	},
	// AfterComplete: the worker itself completed the job.
	"AfterComplete": func(e *env, j core.Job) (core.Lease, bool) {
		e.complete(j.Lease, []byte("done"))
		return core.Lease{}, false
	},
	// AfterSleepWake: the job slept, woke and was claimed again.
	"AfterSleepWake": func(e *env, j core.Job) (core.Lease, bool) {
		if err := e.b.Sleep(e.ctx, j.Lease, e.now().Add(time.Second)); err != nil {
			e.t.Fatalf("Sleep: %v", err)
		}
		e.advance(time.Second)
		c := e.claimAs("q", "w2", 1, leaseTTL)
		if len(c) != 1 || c[0].ID != j.ID {
			e.t.Fatal("the woken job was not claimed again")
		}
		return c[0].Lease, true
	},
}

// testFencing: after a claim is superseded every fenced method refuses the
// old lease with ErrLeaseLost and changes nothing.
func testFencing(t *testing.T, h Harness) {
	for _, tname := range sortedKeys(fencingTriggers) {
		trigger := fencingTriggers[tname]
		t.Run(tname, func(t *testing.T) {
			for _, mname := range sortedKeys(fencedCalls) {
				call := fencedCalls[mname]
				t.Run(mname, func(t *testing.T) {
					e := newEnv(t, h)
					j := e.enqueueClaim(req("q", "t"))
					if _, err := e.b.SaveCheckpoint(e.ctx, j.Lease, "s1", []byte("orig")); err != nil {
						t.Fatalf("SaveCheckpoint: %v", err)
					}
					current, holds := trigger(e, j)
					e.advance(time.Millisecond)
					before := e.snap(j.ID)
					requireErr(t, call(e, j.Lease), core.ErrLeaseLost, mname+" with the superseded lease")
					e.requireUnchanged(before, mname+" with the superseded lease")
					if holds {
						e.complete(current, []byte("current holder"))
					}
				})
			}
		})
	}
	cases(t, h, map[string]func(e *env){
		"UnknownJob": func(e *env) {
			l := core.Lease{JobID: core.NewID(e.now()), WorkerID: "w", Token: 1, ExpiresAt: e.now().Add(time.Hour)}
			for _, name := range sortedKeys(fencedCalls) {
				requireErr(e.t, fencedCalls[name](e, l), core.ErrLeaseLost, name+" on an unknown job")
			}
		},
		"ForeignToken": func(e *env) {
			// A lease whose token belongs to a later claim than the job's.
			j := e.enqueueClaim(req("q", "t"))
			forged := j.Lease
			forged.Token++
			before := e.snap(j.ID)
			for _, name := range sortedKeys(fencedCalls) {
				requireErr(e.t, fencedCalls[name](e, forged), core.ErrLeaseLost, name+" with a token the job never had")
			}
			e.requireUnchanged(before, "calls with a forged token")
		},
	})
}
