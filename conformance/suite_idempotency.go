package conformance

import (
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// keyed is a request with an idempotency key.
func keyed(queue, key, payload string) core.EnqueueRequest {
	r := req(queue, "t")
	r.IdempotencyKey = key
	r.Payload = []byte(payload)
	return r
}

// testIdempotency: a key is held per queue while its job exists.
func testIdempotency(t *testing.T, h Harness) {
	cases(t, h, map[string]func(e *env){
		"Reuse":               idemReuse,
		"ReuseWithinBatch":    idemReuseWithinBatch,
		"Conflict":            idemConflict,
		"ConflictWithinBatch": idemConflictWithinBatch,
		"SameKeyTwoQueues":    idemTwoQueues,
		"HeldAfterTerminal":   idemHeldAfterTerminal,
		"ReleasedByCleanup":   idemReleasedByCleanup,
		"IgnoresPriority":     idemIgnoresPriority,
	})
}

func idemReuse(e *env) {
	first := e.enqueueOne(keyed("q", "order-1", `{"a":1}`))
	e.advance(time.Second)
	res, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{keyed("q", "order-1", `{"a":1}`)})
	if err != nil {
		e.t.Fatalf("second Enqueue: %v", err)
	}
	if !res[0].Reused {
		e.t.Fatal("second Enqueue with the same key and request did not report Reused")
	}
	requireEq(e.t, res[0].Job.ID, first.ID, "reused job id")
	requireTime(e.t, res[0].Job.CreatedAt, first.CreatedAt, "reused job's created at")
	requireEq(e.t, res[0].Job.IdempotencyKey, "order-1", "idempotency key")
	requireEq(e.t, e.total(), 1, "jobs stored")
}

func idemReuseWithinBatch(e *env) {
	r := keyed("q", "k", "p")
	res, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{r, req("q", "t"), r})
	if err != nil {
		e.t.Fatalf("Enqueue: %v", err)
	}
	if res[0].Reused || res[1].Reused || !res[2].Reused {
		e.t.Fatalf("Reused flags %v %v %v, want false false true", res[0].Reused, res[1].Reused, res[2].Reused)
	}
	requireEq(e.t, res[2].Job.ID, res[0].Job.ID, "second item with the same key")
	requireEq(e.t, e.total(), 2, "jobs stored")
}

func idemConflict(e *env) {
	first := e.enqueueOne(keyed("q", "k", "p1"))
	_, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{req("q", "t"), keyed("q", "k", "p2")})
	requireErr(e.t, err, core.ErrIdempotencyConflict, "Enqueue of a different request under a held key")
	requireEq(e.t, e.total(), 1, "jobs stored (the batch must store nothing)")
	requireEq(e.t, string(e.get(first.ID).Payload), "p1", "payload of the key's job")
}

func idemConflictWithinBatch(e *env) {
	_, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{keyed("q", "k", "p1"), keyed("q", "k", "p2")})
	requireErr(e.t, err, core.ErrIdempotencyConflict, "one batch with two requests under one key")
	requireEq(e.t, e.total(), 0, "jobs stored")
}

func idemTwoQueues(e *env) {
	a := e.enqueueOne(keyed("qa", "k", "p1"))
	b := e.enqueueOne(keyed("qb", "k", "p2"))
	if a.ID == b.ID {
		e.t.Fatal("the same key in two queues returned one job")
	}
	requireEq(e.t, e.total(), 2, "jobs stored")
}

func idemHeldAfterTerminal(e *env) {
	for i, finish := range []func(j core.Job){
		func(j core.Job) { e.complete(j.Lease, nil) },
		func(j core.Job) { e.fail(core.Failure{Lease: j.Lease, Error: "boom", Terminal: true}) },
		func(j core.Job) { e.cancel(j.ID, "") },
	} {
		key := "k" + itoa(i)
		j := e.enqueueOne(keyed("q", key, "p"))
		finish(e.claimOne("q"))
		st := e.get(j.ID).State
		if !st.Terminal() {
			e.t.Fatalf("job is %s, want terminal", st)
		}
		res, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{keyed("q", key, "p")})
		if err != nil {
			e.t.Fatalf("Enqueue under the key of a %s job: %v", st, err)
		}
		if !res[0].Reused || res[0].Job.ID != j.ID {
			e.t.Fatalf("Enqueue under the key of a %s job stored a new job", st)
		}
		requireEq(e.t, res[0].Job.State, st, "state of the reused job")
		_, err = e.b.Enqueue(e.ctx, []core.EnqueueRequest{keyed("q", key, "other")})
		requireErr(e.t, err, core.ErrIdempotencyConflict, "different request under the key of a "+string(st)+" job")
	}
}

func idemReleasedByCleanup(e *env) {
	j := e.enqueueOne(keyed("q", "k", "p"))
	e.complete(e.claimOne("q").Lease, nil)
	e.advance(time.Hour)
	n, err := e.b.Cleanup(e.ctx, core.CleanupRequest{FinishedBefore: e.now(), Limit: 10})
	if err != nil || n != 1 {
		e.t.Fatalf("Cleanup = %d, %v; want 1, nil", n, err)
	}
	res, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{keyed("q", "k", "different")})
	if err != nil {
		e.t.Fatalf("Enqueue after Cleanup released the key: %v", err)
	}
	if res[0].Reused || res[0].Job.ID == j.ID {
		e.t.Fatal("Enqueue after Cleanup reused the deleted job")
	}
}

func idemIgnoresPriority(e *env) {
	// Priority, run-at and actor do not take part in the fingerprint.
	a := keyed("q", "k", "p")
	b := a
	b.Priority = 5
	b.Actor = "someone else"
	b.RunAt = e.now().Add(time.Hour)
	first := e.enqueueOne(a)
	res, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{b})
	if err != nil {
		e.t.Fatalf("Enqueue with another priority: %v", err)
	}
	if !res[0].Reused || res[0].Job.ID != first.ID {
		e.t.Fatal("a request differing only in priority, actor and run-at was not reused")
	}
	requireEq(e.t, res[0].Job.Priority, 0, "priority of the reused job")
}
