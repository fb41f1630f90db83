package conformance

import (
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testLifecycle: Close, and returned values that callers may change.
func testLifecycle(t *testing.T, h Harness) {
	cases(t, h, map[string]func(e *env){
		"Close":                lifecycleClose,
		"NoAliasingOnEnqueue":  aliasEnqueue,
		"NoAliasingOnReads":    aliasReads,
		"NoAliasingResult":     aliasResult,
		"NoAliasingCheckpoint": aliasCheckpoint,
	})
}

func lifecycleClose(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	if err := e.b.Close(); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
	ctx := e.ctx
	b := e.b
	l := j.Lease
	calls := map[string]func() error{
		"Enqueue": func() error { _, err := b.Enqueue(ctx, []core.EnqueueRequest{req("q", "t")}); return err },
		"Claim": func() error {
			_, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 1, LeaseTTL: time.Second})
			return err
		},
		"Heartbeat": func() error { _, err := b.Heartbeat(ctx, l, time.Second); return err },
		"Complete":  func() error { _, err := b.Complete(ctx, []core.Completion{{Lease: l}}); return err },
		"Fail":      func() error { _, err := b.Fail(ctx, core.Failure{Lease: l, Error: "x"}); return err },
		"Sleep":     func() error { return b.Sleep(ctx, l, e.now()) },
		"SaveCheckpoint": func() error {
			_, err := b.SaveCheckpoint(ctx, l, "s", nil)
			return err
		},
		"Checkpoints":    func() error { _, err := b.Checkpoints(ctx, j.ID); return err },
		"Rescue":         func() error { _, err := b.Rescue(ctx, core.RescueRequest{Limit: 1}); return err },
		"Cancel":         func() error { _, err := b.Cancel(ctx, j.ID, ""); return err },
		"Retry":          func() error { _, err := b.Retry(ctx, j.ID); return err },
		"GetJob":         func() error { _, err := b.GetJob(ctx, j.ID); return err },
		"ListJobs":       func() error { _, err := b.ListJobs(ctx, core.JobFilter{}); return err },
		"CountJobs":      func() error { _, err := b.CountJobs(ctx, core.JobFilter{}); return err },
		"ListRuns":       func() error { _, err := b.ListRuns(ctx, j.ID); return err },
		"TaskStats":      func() error { _, err := b.TaskStats(ctx, "t"); return err },
		"ListQueues":     func() error { _, err := b.ListQueues(ctx); return err },
		"GetTaskConfig":  func() error { _, err := b.GetTaskConfig(ctx, "t"); return err },
		"PutTaskConfig":  func() error { return b.PutTaskConfig(ctx, core.TaskConfig{Task: "t"}) },
		"GetQueueConfig": func() error { _, err := b.GetQueueConfig(ctx, "q"); return err },
		"PutQueueConfig": func() error { return b.PutQueueConfig(ctx, core.QueueConfig{Queue: "q"}) },
		"Cleanup": func() error {
			_, err := b.Cleanup(ctx, core.CleanupRequest{FinishedBefore: e.now(), Limit: 1})
			return err
		},
	}
	for _, name := range sortedKeys(calls) {
		requireErr(e.t, calls[name](), core.ErrClosed, name+" after Close")
	}
}

// scribble overwrites every byte of b.
func scribble(b []byte) {
	for i := range b {
		b[i] = 'X'
	}
}

func aliasEnqueue(e *env) {
	payload := []byte(`{"v":1}`)
	headers := map[string]string{"h": "v"}
	r := req("q", "t")
	r.Payload, r.Headers = payload, headers
	res, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{r})
	if err != nil {
		e.t.Fatalf("Enqueue: %v", err)
	}
	scribble(payload)
	headers["h"] = "changed"
	headers["new"] = "x"
	scribble(res[0].Job.Payload)
	res[0].Job.Headers["h"] = "changed again"
	got := e.get(res[0].Job.ID)
	requireEq(e.t, string(got.Payload), `{"v":1}`, "stored payload after the caller changed its buffers")
	if len(got.Headers) != 1 || got.Headers["h"] != "v" {
		e.t.Fatalf("stored headers changed with the caller's map: %v", got.Headers)
	}
}

func aliasReads(e *env) {
	r := req("q", "t")
	r.Headers = map[string]string{"h": "v"}
	j := e.enqueueOne(r)
	g := e.get(j.ID)
	scribble(g.Payload)
	g.Headers["h"] = "x"
	p := e.list(core.JobFilter{})
	scribble(p.Jobs[0].Payload)
	p.Jobs[0].Headers["h"] = "y"
	c := e.claimOne("q")
	scribble(c.Payload)
	c.Headers["h"] = "z"
	got := e.get(j.ID)
	requireEq(e.t, string(got.Payload), string(j.Payload), "payload after changing returned jobs")
	requireEq(e.t, got.Headers["h"], "v", "header after changing returned jobs")
}

func aliasResult(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	result := []byte("result")
	e.complete(j.Lease, result)
	scribble(result)
	g := e.get(j.ID)
	requireEq(e.t, string(g.Result), "result", "stored result after the caller changed its buffer")
	scribble(g.Result)
	requireEq(e.t, string(e.get(j.ID).Result), "result", "stored result after changing a returned job")
}

func aliasCheckpoint(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	v := []byte("value")
	got, err := e.b.SaveCheckpoint(e.ctx, j.Lease, "s", v)
	if err != nil {
		e.t.Fatalf("SaveCheckpoint: %v", err)
	}
	scribble(v)
	scribble(got)
	cs := e.checkpoints(j.ID)
	requireEq(e.t, string(cs[0].Value), "value", "stored checkpoint after changing buffers")
	scribble(cs[0].Value)
	requireEq(e.t, e.save(j.Lease, "s", "other"), "value", "stored checkpoint after changing a returned one")
}
