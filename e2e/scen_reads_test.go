package e2e_test

import (
	"errors"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

var readScenarios = []scenario{
	{"run_lifecycle", func(e *env) {
		w := e.worker(func(o *boson.WorkerOptions) { o.ID = "lifecycle-worker" })
		e.must(boson.Register(w, echoTask, echo))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1)
		e.must(err)
		_, err = h.Wait(e.ctx)
		e.must(err)
		rs := e.runs(h.ID())
		if len(rs) != 1 || rs[0].Attempt != 1 || rs[0].Status != core.RunSucceeded || rs[0].WorkerID != "lifecycle-worker" || rs[0].FinishedAt.IsZero() {
			e.Fatalf("runs %+v", rs)
		}
		j, err := h.Snapshot(e.ctx)
		e.must(err)
		if j.FirstStartedAt.IsZero() || j.FinishedAt.IsZero() || string(j.Result) != "1" {
			e.Fatalf("job %+v", j)
		}
	}},
	{"list_and_count_jobs", func(e *env) {
		_, err := boson.SpawnBatch(e.ctx, e.client, echoTask, []int{1, 2, 3})
		e.must(err)
		_, err = boson.Spawn(e.ctx, e.client, childTask, 1, boson.WithQueue("other"))
		e.must(err)
		page, err := e.b.ListJobs(e.ctx, core.JobFilter{Task: "echo"})
		e.must(err)
		if len(page.Jobs) != 3 || page.Next != "" {
			e.Fatalf("page %+v", page)
		}
		n, err := e.b.CountJobs(e.ctx, core.JobFilter{Queue: "other"})
		e.must(err)
		if n[core.StateQueued] != 1 {
			e.Fatalf("counts %v", n)
		}
	}},
	{"list_jobs_pagination", func(e *env) {
		ins := make([]int, 25)
		_, err := boson.SpawnBatch(e.ctx, e.client, echoTask, ins)
		e.must(err)
		seen := map[string]bool{}
		cursor := ""
		for pages := 0; ; pages++ {
			p, err := e.b.ListJobs(e.ctx, core.JobFilter{Limit: 10, Cursor: cursor})
			e.must(err)
			for _, j := range p.Jobs {
				if seen[j.ID] {
					e.Fatalf("job %s listed twice", j.ID)
				}
				seen[j.ID] = true
			}
			if p.Next == "" {
				if pages != 2 {
					e.Fatalf("pages %d", pages+1)
				}
				break
			}
			cursor = p.Next
		}
		if len(seen) != 25 {
			e.Fatalf("listed %d", len(seen))
		}
	}},
	{"get_job_not_found", func(e *env) {
		if _, err := e.client.GetJob(e.ctx, core.NewID(e.clock.Now())); !errors.Is(err, core.ErrNotFound) {
			e.Fatalf("get: %v", err)
		}
		if _, err := boson.HandleFor(e.ctx, e.client, echoTask, "missing"); !errors.Is(err, core.ErrNotFound) {
			e.Fatalf("handle: %v", err)
		}
	}},
	{"task_run_stats", func(e *env) {
		fn, _ := failTimes(1)
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, fn))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 1, fastRetry)
		e.must(err)
		e.waitRetry(h.ID(), 1)
		_, err = h.Wait(e.ctx)
		e.must(err)
		st, err := e.b.TaskStats(e.ctx, "echo")
		e.must(err)
		if st.Jobs[core.StateSucceeded] != 1 || st.Runs[core.RunFailed] != 1 || st.Runs[core.RunSucceeded] != 1 {
			e.Fatalf("stats %+v", st)
		}
	}},
}
