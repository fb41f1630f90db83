package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// signalWait bounds how long the suite waits for a notification. It is a
// bound on waiting for an event, not a sleep: the wait ends as soon as the
// signal arrives.
const signalWait = 10 * time.Second

// testCapabilities: declared optional capabilities work; undeclared ones
// report core.ErrUnsupported (transactional enqueue) or are safe to call
// and report ok=false (notifications).
//
// Notifications that are not declared: core.SubscribeQueue must report
// ok=false, or, if the backend type implements core.Notifier anyway, its
// Subscribe must return a stop function that can be called; the channel
// may be nil. The suite does not wait for signals it was not promised.
func testCapabilities(t *testing.T, h Harness) {
	cs := map[string]func(e *env){}
	if h.Capabilities.Notify {
		cs["NotifyOnEnqueue"] = notifyEnqueue
		cs["NotifyOnFinish"] = notifyFinish
		cs["NotifyStop"] = notifyStop
	} else {
		cs["NotifyUndeclared"] = notifyUndeclared
	}
	if h.Capabilities.TxEnqueue {
		cs["TxCommit"] = txCommit
		cs["TxRollback"] = txRollback
		cs["TxWrongType"] = txWrongType
	} else {
		cs["TxUndeclared"] = txUndeclared
	}
	if h.Capabilities.Flow {
		cs["FlowDeclared"] = flowDeclared
	} else {
		cs["FlowUndeclared"] = flowUndeclared
	}
	cases(t, h, cs)
}

func (e *env) subscribe(queue string) (<-chan struct{}, func()) {
	e.t.Helper()
	sig, stop, ok := core.SubscribeQueue(e.b, queue)
	if !ok {
		e.t.Fatalf("the harness declares Notify but %T does not implement core.Notifier", e.b)
	}
	if sig == nil || stop == nil {
		e.t.Fatal("Subscribe returned a nil channel or stop function")
	}
	e.t.Cleanup(stop)
	return sig, stop
}

// drain empties a coalescing signal channel (signals may be spurious).
func drain(sig <-chan struct{}) {
	for {
		select {
		case <-sig:
		default:
			return
		}
	}
}

func (e *env) awaitSignal(sig <-chan struct{}, what string) {
	e.t.Helper()
	timer := time.NewTimer(signalWait)
	defer timer.Stop()
	select {
	case <-sig:
	case <-timer.C:
		e.t.Fatalf("no notification within %v after %s", signalWait, what)
	}
}

func notifyEnqueue(e *env) {
	sig, _ := e.subscribe("q")
	drain(sig)
	e.enqueueOne(req("q", "t"))
	e.awaitSignal(sig, "an enqueue")
}

func notifyFinish(e *env) {
	sig, _ := e.subscribe("q")
	j := e.enqueueClaim(req("q", "t"))
	drain(sig)
	e.complete(j.Lease, nil)
	e.awaitSignal(sig, "a job finished")
}

func notifyStop(e *env) {
	_, stop := e.subscribe("q")
	stop()
	e.enqueueOne(req("q", "t")) // must not block or panic on a stopped subscription
	sig2, _ := e.subscribe("q")
	drain(sig2)
	e.enqueueOne(req("q", "t"))
	e.awaitSignal(sig2, "an enqueue on a second subscription")
}

func notifyUndeclared(e *env) {
	sig, stop, ok := core.SubscribeQueue(e.b, "q")
	if stop == nil {
		e.t.Fatal("core.SubscribeQueue returned a nil stop function")
	}
	defer stop()
	if !ok {
		return
	}
	e.enqueueOne(req("q", "t"))
	select { // a nil channel never delivers; anything else may or may not
	case <-sig:
	default:
	}
}

func (e *env) beginTx() (tx any, commit, rollback func() error) {
	e.t.Helper()
	return e.h.BeginTx(e.ctx, e.t, e.b)
}

func txCommit(e *env) {
	tx, commit, _ := e.beginTx()
	res, err := core.EnqueueTx(e.ctx, e.b, tx, []core.EnqueueRequest{req("q", "t"), req("q", "t")})
	if err != nil {
		e.t.Fatalf("EnqueueTx: %v", err)
	}
	requireEq(e.t, len(res), 2, "results")
	requireEq(e.t, e.total(), 0, "jobs visible before the commit")
	if err := commit(); err != nil {
		e.t.Fatalf("commit: %v", err)
	}
	for _, r := range res {
		e.requireState(r.Job.ID, core.StateQueued)
	}
	requireEq(e.t, len(e.claim("q", 10)), 2, "claimable after the commit")
}

func txRollback(e *env) {
	tx, _, rollback := e.beginTx()
	res, err := core.EnqueueTx(e.ctx, e.b, tx, []core.EnqueueRequest{req("q", "t")})
	if err != nil {
		e.t.Fatalf("EnqueueTx: %v", err)
	}
	if err := rollback(); err != nil {
		e.t.Fatalf("rollback: %v", err)
	}
	_, err = e.b.GetJob(e.ctx, res[0].Job.ID)
	requireErr(e.t, err, core.ErrNotFound, "GetJob of a rolled-back job")
	requireEq(e.t, e.total(), 0, "jobs after rollback")
	e.claimNone("q", "the enqueue was rolled back")
}

func txWrongType(e *env) {
	_, err := core.EnqueueTx(e.ctx, e.b, struct{}{}, []core.EnqueueRequest{req("q", "t")})
	requireErr(e.t, err, core.ErrInvalidArgument, "EnqueueTx with a foreign transaction type")
	_, err = core.EnqueueTx(e.ctx, e.b, nil, []core.EnqueueRequest{req("q", "t")})
	requireErr(e.t, err, core.ErrInvalidArgument, "EnqueueTx with a nil transaction")
	requireEq(e.t, e.total(), 0, "jobs stored")
}

func txUndeclared(e *env) {
	_, err := core.EnqueueTx(e.ctx, e.b, struct{}{}, []core.EnqueueRequest{req("q", "t")})
	requireErr(e.t, err, core.ErrUnsupported, "core.EnqueueTx on a backend that does not declare TxEnqueue")
	if te, ok := e.b.(core.TxEnqueuer); ok {
		_, err := te.EnqueueTx(e.ctx, nil, []core.EnqueueRequest{req("q", "t")})
		if !errors.Is(err, core.ErrUnsupported) {
			e.t.Fatalf("EnqueueTx of an undeclared capability: %v, want ErrUnsupported", err)
		}
	}
	requireEq(e.t, e.total(), 0, "jobs stored")
}
