package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testEnqueue: single and batch enqueue store what was asked, with defaults.
func testEnqueue(t *testing.T, h Harness) {
	cases(t, h, map[string]func(e *env){
		"Single":            enqueueSingle,
		"Defaults":          enqueueDefaults,
		"Batch":             enqueueBatch,
		"ScheduledRunAt":    enqueueScheduled,
		"PastRunAtIsNow":    enqueuePastRunAt,
		"BatchAtomic":       enqueueBatchAtomic,
		"DuplicatesAllowed": enqueueDuplicates,
	})
}

func enqueueSingle(e *env) {
	r := core.EnqueueRequest{
		Queue: "emails", Task: "send_welcome", Payload: []byte(`{"to":"a@b.c"}`),
		Headers:  map[string]string{"trace": "abc", "tenant": "t1"},
		Priority: -7, MaxAttempts: 3,
		Retry:  core.RetryPolicy{Initial: time.Second, Factor: 2, Max: time.Minute, Jitter: 0.25},
		Cancel: core.CancellationPolicy{MaxDelay: time.Hour, MaxDuration: 2 * time.Hour},
		Actor:  "tester",
	}
	res, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{r})
	if err != nil {
		e.t.Fatalf("Enqueue: %v", err)
	}
	if len(res) != 1 || res[0].Reused {
		e.t.Fatalf("Enqueue returned %+v, want one new job", res)
	}
	j := res[0].Job
	if len(j.ID) == 0 {
		e.t.Fatal("job has no id")
	}
	want := core.Job{
		ID: j.ID, Queue: "emails", Task: "send_welcome", Payload: r.Payload, Headers: r.Headers,
		Priority: -7, State: core.StateQueued, Attempt: 0, MaxAttempts: 3, Retry: r.Retry, Cancel: r.Cancel,
		Fingerprint: core.Fingerprint(r), Actor: "tester", RunAt: e.now(), CreatedAt: e.now(),
	}
	if d := diff(want, j); d != "" {
		e.t.Fatalf("Enqueue returned a job that differs from the request: %s", d)
	}
	if d := diff(want, e.get(j.ID)); d != "" {
		e.t.Fatalf("GetJob differs from the request: %s", d)
	}
	if !j.RunAt.IsZero() && j.RunAt.Location() != time.UTC {
		e.t.Fatalf("RunAt %v is not UTC", j.RunAt)
	}
}

func enqueueDefaults(e *env) {
	j := e.enqueueOne(core.EnqueueRequest{Task: "t"})
	requireEq(e.t, j.Queue, core.DefaultQueue, "queue")
	requireEq(e.t, j.MaxAttempts, core.DefaultMaxAttempts, "max attempts")
	requireEq(e.t, j.Priority, 0, "priority")
	requireEq(e.t, j.State, core.StateQueued, "state")
	requireTime(e.t, j.RunAt, e.now(), "run at")
	requireEq(e.t, j.Fingerprint, core.Fingerprint(core.EnqueueRequest{Task: "t"}), "fingerprint")
	if c := e.claimOne(core.DefaultQueue); c.ID != j.ID {
		e.t.Fatalf("claimed %s from the default queue, want %s", c.ID, j.ID)
	}
}

func enqueueBatch(e *env) {
	var reqs []core.EnqueueRequest
	for i := range 50 {
		q := "a"
		if i%2 == 1 {
			q = "b"
		}
		r := req(q, "task"+itoa(i%3))
		r.Payload = []byte(`{"i":` + itoa(i) + `}`)
		reqs = append(reqs, r)
	}
	jobs := e.enqueue(reqs...)
	seen := map[string]bool{}
	for i, j := range jobs {
		if seen[j.ID] {
			e.t.Fatalf("id %s returned twice", j.ID)
		}
		seen[j.ID] = true
		if i > 0 && j.ID <= jobs[i-1].ID {
			e.t.Fatalf("ids are not increasing in request order: %s then %s", jobs[i-1].ID, j.ID)
		}
		got := e.get(j.ID)
		requireEq(e.t, got.Queue, reqs[i].Queue, "queue of item "+itoa(i))
		requireEq(e.t, got.Task, reqs[i].Task, "task of item "+itoa(i))
		requireEq(e.t, string(got.Payload), string(reqs[i].Payload), "payload of item "+itoa(i))
	}
	if n := e.count(core.JobFilter{})[core.StateQueued]; n != 50 {
		e.t.Fatalf("%d queued jobs, want 50", n)
	}
	if n := e.count(core.JobFilter{Queue: "b"})[core.StateQueued]; n != 25 {
		e.t.Fatalf("%d queued jobs in b, want 25", n)
	}
}

func enqueueScheduled(e *env) {
	at := e.now().Add(90*time.Minute + 123*time.Millisecond)
	r := req("q", "t")
	r.RunAt = at
	j := e.enqueueOne(r)
	requireTime(e.t, j.RunAt, at, "returned run at")
	requireTime(e.t, e.get(j.ID).RunAt, at, "stored run at")
	requireTime(e.t, e.get(j.ID).CreatedAt, e.now(), "created at")
}

func enqueuePastRunAt(e *env) {
	r := req("q", "t")
	r.RunAt = e.now().Add(-time.Hour)
	j := e.enqueueOne(r)
	requireTime(e.t, e.get(j.ID).RunAt, e.now(), "run at of a job scheduled in the past")
	e.claimOne("q")
}

func enqueueBatchAtomic(e *env) {
	good := req("q", "t")
	bad := req("q", "bad task")
	_, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{good, good, bad, good})
	requireErr(e.t, err, core.ErrInvalidArgument, "Enqueue with an invalid third item")
	var be *core.BatchError
	if !errors.As(err, &be) {
		e.t.Fatalf("error %v is not a *core.BatchError", err)
	}
	requireEq(e.t, be.Index, 2, "BatchError.Index")
	requireEq(e.t, e.total(), 0, "jobs stored by a failed batch")
}

func enqueueDuplicates(e *env) {
	r := req("q", "t")
	jobs := e.enqueue(r, r)
	second := e.enqueueOne(r)
	if jobs[0].ID == jobs[1].ID || second.ID == jobs[0].ID {
		e.t.Fatal("requests without an idempotency key were merged")
	}
	requireEq(e.t, e.total(), 3, "jobs stored")
}
