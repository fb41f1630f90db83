package boson_test

import (
	"errors"
	"testing"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

func TestAdminReadsAcrossRouter(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	other := mem.New(mem.Options{Clock: e.clock, Logger: quiet})
	t.Cleanup(func() { _ = other.Close() })
	r := core.NewRouter(e.b)
	_ = r.Register("other", other)
	_ = r.Route("far", "other")
	c, _ := boson.NewRouterClient(r, boson.ClientOptions{Clock: e.clock, Logger: quiet})
	near, _ := boson.Spawn(ctx, c, childTask, 1)
	_, _ = boson.Spawn(ctx, c, childTask, 2, boson.WithQueue("far"))
	_, _ = boson.Spawn(ctx, c, childTask, 3, boson.WithQueue("far"))
	qs, err := c.ListQueues(ctx)
	if err != nil || len(qs) != 2 || qs[0].Queue != "default" || qs[1].Queue != "far" || qs[1].Jobs[core.StateQueued] != 2 {
		t.Fatalf("queues %+v %v", qs, err)
	}
	n, err := c.CountJobs(ctx, core.JobFilter{})
	if err != nil || n[core.StateQueued] != 3 {
		t.Fatalf("counts %v %v", n, err)
	}
	st, err := c.TaskStats(ctx, "child")
	if err != nil || st.Jobs[core.StateQueued] != 3 {
		t.Fatalf("stats %+v %v", st, err)
	}
	page, err := c.ListJobs(ctx, core.JobFilter{Queue: "far"})
	if err != nil || len(page.Jobs) != 2 {
		t.Fatalf("page %+v %v", page, err)
	}
	if runs, err := c.ListRuns(ctx, near.ID()); err != nil || len(runs) != 0 {
		t.Fatalf("runs %v %v", runs, err)
	}
	if _, err := c.ListRuns(ctx, "nope"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("missing job: %v", err)
	}
	if qc, err := c.GetQueueConfig(ctx, "far"); err != nil || qc.Queue != "far" {
		t.Fatalf("queue config %+v %v", qc, err)
	}
}
