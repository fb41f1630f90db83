package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

func TestListJobsFiltersAndPagination(t *testing.T) {
	e := newEnv(t, NoAuth())
	ctx := context.Background()
	reqs := make([]core.EnqueueRequest, 120)
	for i := range reqs {
		reqs[i] = core.EnqueueRequest{Queue: "bulk", Task: "noop"}
	}
	if _, err := e.be.Enqueue(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	var page jobPageView
	e.do("GET", "/api/v1/jobs?queue=bulk", "", nil, &page)
	if len(page.Jobs) != DefaultLimit || page.Next == "" {
		t.Fatalf("default page: %d jobs, next %q", len(page.Jobs), page.Next)
	}
	// Following next visits every job once, in id order.
	seen := map[string]bool{}
	last := ""
	for cursor, pages := "", 0; ; pages++ {
		var p jobPageView
		e.do("GET", "/api/v1/jobs?queue=bulk&limit=7&cursor="+cursor, "", nil, &p)
		for _, j := range p.Jobs {
			if seen[j.ID] || j.ID <= last || j.Queue != "bulk" {
				t.Fatalf("job %s repeated or out of order", j.ID)
			}
			seen[j.ID], last = true, j.ID
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	if len(seen) != 120 {
		t.Fatalf("visited %d jobs", len(seen))
	}
	e.do("GET", "/api/v1/jobs?order=desc&limit=1", "", nil, &page)
	if len(page.Jobs) != 1 || page.Jobs[0].Queue != "bulk" {
		t.Fatalf("desc: %+v", page.Jobs)
	}
	page = jobPageView{}
	e.do("GET", "/api/v1/jobs?state=failed,succeeded&queue=mail", "", nil, &page)
	if len(page.Jobs) != 2 || page.Next != "" {
		t.Fatalf("states: %d jobs", len(page.Jobs))
	}
	e.do("GET", "/api/v1/jobs?state=running&state=failed", "", nil, &page)
	if len(page.Jobs) != 2 {
		t.Fatalf("repeated state: %d jobs", len(page.Jobs))
	}
	e.do("GET", "/api/v1/jobs?task=build_report", "", nil, &page)
	if len(page.Jobs) != 1 || page.Jobs[0].ID != e.ids.running {
		t.Fatalf("task filter: %+v", page.Jobs)
	}
	e.do("GET", fmt.Sprintf("/api/v1/jobs?limit=%d", MaxLimit), "", nil, &page)
	if len(page.Jobs) != 125 {
		t.Fatalf("max limit: %d", len(page.Jobs))
	}
	for _, q := range []string{
		"limit=0", fmt.Sprintf("limit=%d", MaxLimit+1), "limit=x", "limit=-1",
		"state=done", "order=up", "queue=a.b", "task=%20", "colour=red",
		"queue=a&queue=b", "cursor=" + strings.Repeat("Z", 200), "cursor=a/b",
	} {
		e.expect("GET", "/api/v1/jobs?"+q, "", nil, 400, "invalid_argument")
	}
}

func TestEnqueue(t *testing.T) {
	e := newEnv(t, Tokens(nil, []string{adminToken}))
	var res enqueueView
	resp, data := e.do("POST", "/api/v1/jobs", adminToken, map[string]any{
		"task": "resize", "queue": "images", "payload": json.RawMessage(`{"w": 10, "h": 20}`),
		"priority": -5, "delay": "90s", "max_attempts": 3, "idempotency_key": "img-1",
		"headers": map[string]string{"tenant": "t1"}, "retry": map[string]any{"initial": "1s", "factor": 2, "max": "1m", "jitter": 0.1},
		"cancel": map[string]any{"max_delay": "1h"},
	}, &res)
	if resp.StatusCode != 201 || res.Reused {
		t.Fatalf("enqueue: %d %s", resp.StatusCode, data)
	}
	j, err := e.be.GetJob(context.Background(), res.Job.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := e.clock.Now().Add(90 * time.Second)
	if string(j.Payload) != `{"w":10,"h":20}` || j.Queue != "images" || j.Priority != -5 || j.MaxAttempts != 3 ||
		!j.RunAt.Equal(want) || j.Headers["tenant"] != "t1" || j.Retry.Initial != time.Second || j.Cancel.MaxDelay != time.Hour || j.Actor != "admin" {
		t.Fatalf("stored job: %+v", j)
	}
	// The same request again reuses the job; a different one conflicts.
	resp, data = e.do("POST", "/api/v1/jobs", adminToken, map[string]any{
		"task": "resize", "queue": "images", "payload": json.RawMessage(`{"w":10,"h":20}`), "max_attempts": 3, "idempotency_key": "img-1",
		"headers": map[string]string{"tenant": "t1"}, "retry": map[string]any{"initial": "1s", "factor": 2, "max": "1m", "jitter": 0.1},
		"cancel": map[string]any{"max_delay": "1h"},
	}, &res)
	if resp.StatusCode != 200 || !res.Reused || res.Job.ID != j.ID {
		t.Fatalf("reuse: %d %s", resp.StatusCode, data)
	}
	e.expect("POST", "/api/v1/jobs", adminToken, map[string]any{"task": "resize", "queue": "images", "idempotency_key": "img-1"}, 409, "idempotency_conflict")

	// Binary payloads travel as base64 and come back the same way.
	e.do("POST", "/api/v1/jobs", adminToken, map[string]any{"task": "blob", "payload_base64": "AAEC/w=="}, &res)
	if res.Job.PayloadBase64 != "AAEC/w==" || res.Job.Payload != nil || res.Job.Queue != core.DefaultQueue {
		t.Fatalf("base64 payload: %+v", res.Job)
	}
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	e.do("POST", "/api/v1/jobs", adminToken, map[string]any{"task": "later", "run_at": at}, &res)
	if !res.Job.RunAt.Equal(at) {
		t.Fatalf("run_at: %v", res.Job.RunAt)
	}

	// Rate limits from the task config answer 429.
	e.expect("PUT", "/api/v1/tasks/limited/config", adminToken, map[string]any{"max_in_flight": 1}, 200, "")
	e.expect("POST", "/api/v1/jobs", adminToken, map[string]any{"task": "limited"}, 201, "")
	e.expect("POST", "/api/v1/jobs", adminToken, map[string]any{"task": "limited"}, 429, "rate_limited")

	for name, body := range map[string]string{
		"empty":            ``,
		"not json":         `task=x`,
		"array":            `[]`,
		"unknown field":    `{"task":"x","colour":"red"}`,
		"trailing":         `{"task":"x"} {}`,
		"no task":          `{}`,
		"bad task":         `{"task":"a b"}`,
		"bad queue":        `{"task":"x","queue":"a.b"}`,
		"priority":         `{"task":"x","priority":5000}`,
		"attempts":         `{"task":"x","max_attempts":-1}`,
		"both payloads":    `{"task":"x","payload":1,"payload_base64":"AA=="}`,
		"bad base64":       `{"task":"x","payload_base64":"%%%"}`,
		"delay number":     `{"task":"x","delay":5}`,
		"delay bad":        `{"task":"x","delay":"soon"}`,
		"delay negative":   `{"task":"x","delay":"-1s"}`,
		"run_at and delay": `{"task":"x","delay":"1s","run_at":"2030-01-01T00:00:00Z"}`,
		"run_at bad":       `{"task":"x","run_at":"tomorrow"}`,
		"factor":           `{"task":"x","retry":{"factor":0.5}}`,
		"key too long":     `{"task":"x","idempotency_key":"` + strings.Repeat("k", 300) + `"}`,
	} {
		resp, data := e.do("POST", "/api/v1/jobs", adminToken, body, nil)
		if resp.StatusCode != 400 || !strings.Contains(string(data), `"invalid_argument"`) {
			t.Errorf("%s: %d %s", name, resp.StatusCode, data)
		}
	}
	big := `{"task":"x","payload":"` + strings.Repeat("a", DefaultMaxBodyBytes) + `"}`
	e.expect("POST", "/api/v1/jobs", adminToken, big, 413, "body_too_large")
	tooBigPayload := `{"task":"x","payload":"` + strings.Repeat("a", 2<<20) + `"}`
	e.expect("POST", "/api/v1/jobs", adminToken, tooBigPayload, 400, "invalid_argument")

	req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/jobs", strings.NewReader(`{"task":"x"}`))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "text/plain")
	r, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 415 {
		t.Fatalf("text/plain: %d", r.StatusCode)
	}
}

func TestJobEndpoints(t *testing.T) {
	e := newEnv(t, NoAuth())
	var j jobView
	e.do("GET", "/api/v1/jobs/"+e.ids.succeeded, "", nil, &j)
	if j.State != core.StateSucceeded || string(j.Result) != `{"sent":true}` || string(j.Payload) != `{"to":"a@example.com"}` || j.FinishedAt == nil || j.Lease == nil {
		t.Fatalf("succeeded job: %+v", j)
	}
	var runs struct{ Runs []runView }
	e.do("GET", "/api/v1/jobs/"+e.ids.succeeded+"/runs", "", nil, &runs)
	if len(runs.Runs) != 1 || runs.Runs[0].Status != core.RunSucceeded || runs.Runs[0].Duration != "1s" {
		t.Fatalf("runs: %+v", runs)
	}
	var cps struct{ Checkpoints []checkpointView }
	e.do("GET", "/api/v1/jobs/"+e.ids.succeeded+"/checkpoints", "", nil, &cps)
	if len(cps.Checkpoints) != 1 || cps.Checkpoints[0].Step != "render" || !jsonEqual(cps.Checkpoints[0].Value, `{"html":"<b>hi</b>"}`) {
		t.Fatalf("checkpoints: %+v", cps)
	}
	missing := core.NewID(time.Now())
	for _, p := range []string{"", "/runs", "/checkpoints"} {
		e.expect("GET", "/api/v1/jobs/"+missing+p, "", nil, 404, "not_found")
		e.expect("GET", "/api/v1/jobs/bad.id"+p, "", nil, 400, "invalid_argument")
	}
	e.expect("POST", "/api/v1/jobs/"+missing+"/cancel", "", nil, 404, "not_found")
	e.expect("POST", "/api/v1/jobs/"+missing+"/retry", "", nil, 404, "not_found")

	// Cancel with a reason; a second cancel returns the job unchanged.
	e.do("POST", "/api/v1/jobs/"+e.ids.running+"/cancel", "", map[string]string{"reason": "operator says stop"}, &j)
	if j.State != core.StateCancelled || j.LastError != "operator says stop" {
		t.Fatalf("cancel: %+v", j)
	}
	e.expect("POST", "/api/v1/jobs/"+e.ids.running+"/cancel", "", nil, 200, "")
	e.expect("POST", "/api/v1/jobs/"+e.ids.running+"/cancel", "", `{"why":"x"}`, 400, "invalid_argument")
	e.expect("POST", "/api/v1/jobs/"+e.ids.succeeded+"/cancel", "", nil, 409, "invalid_state")
	var rs struct{ Runs []runView }
	e.do("GET", "/api/v1/jobs/"+e.ids.running+"/runs", "", nil, &rs)
	if len(rs.Runs) != 1 || rs.Runs[0].Status != core.RunCancelled {
		t.Fatalf("cancelled run: %+v", rs)
	}

	// Retry a failed job; retrying a queued or succeeded job conflicts.
	e.do("POST", "/api/v1/jobs/"+e.ids.failed+"/retry", "", nil, &j)
	if j.State != core.StateQueued || j.MaxAttempts != 2 {
		t.Fatalf("retry: %+v", j)
	}
	e.expect("POST", "/api/v1/jobs/"+e.ids.failed+"/retry", "", nil, 409, "invalid_state")
	e.expect("POST", "/api/v1/jobs/"+e.ids.succeeded+"/retry", "", nil, 409, "invalid_state")

	e.expect("PATCH", "/api/v1/jobs/"+e.ids.queued, "", nil, 405, "method_not_allowed")
	e.expect("GET", "/api/v1/nothing", "", nil, 404, "not_found")
	e.expect("GET", "/api/v1/jobs/", "", nil, 404, "not_found")
}

func TestTasksAndConfigs(t *testing.T) {
	e := newEnv(t, NoAuth(), func(o *Options) { o.Tasks = []string{"registered_only"} })
	e.expect("GET", "/api/v1/tasks/send_email/config", "", nil, 404, "not_found")
	var cfg taskConfigView
	e.do("PUT", "/api/v1/tasks/send_email/config", "", map[string]any{
		"max_in_flight": 10, "max_enqueue_per_second": 5, "queue": "mail", "priority": 3, "max_attempts": 7,
		"retry": map[string]any{"initial": "2s", "factor": 2},
	}, &cfg)
	if cfg.Task != "send_email" || cfg.MaxInFlight != 10 || cfg.Retry == nil || cfg.Retry.Initial != "2s" {
		t.Fatalf("put: %+v", cfg)
	}
	stored, err := e.be.GetTaskConfig(context.Background(), "send_email")
	if err != nil || stored.MaxEnqueuePerSecond != 5 || stored.Retry.Initial != 2*time.Second {
		t.Fatalf("stored: %+v %v", stored, err)
	}
	e.do("GET", "/api/v1/tasks/send_email/config", "", nil, &cfg)
	if cfg.MaxAttempts != 7 || cfg.Queue != "mail" {
		t.Fatalf("get: %+v", cfg)
	}
	e.expect("PUT", "/api/v1/tasks/send_email/config", "", map[string]any{"task": "other"}, 400, "invalid_argument")
	e.expect("PUT", "/api/v1/tasks/send_email/config", "", map[string]any{"max_in_flight": -1}, 400, "invalid_argument")
	e.expect("PUT", "/api/v1/tasks/send_email/config", "", map[string]any{"burst": 1}, 400, "invalid_argument")
	e.expect("PUT", "/api/v1/tasks/bad.name/config", "", map[string]any{}, 400, "invalid_argument")

	var task taskView
	e.do("GET", "/api/v1/tasks/send_email", "", nil, &task)
	if task.Jobs[core.StateSucceeded] != 1 || task.Jobs[core.StateFailed] != 1 || task.Jobs[core.StateQueued] != 2 ||
		task.Runs[core.RunSucceeded] != 1 || task.RunTime != "1s" || task.Config == nil {
		t.Fatalf("task: %+v", task)
	}
	var list struct{ Tasks []taskView }
	e.do("GET", "/api/v1/tasks", "", nil, &list)
	var names []string
	for _, tv := range list.Tasks {
		names = append(names, tv.Task)
	}
	if strings.Join(names, ",") != "build_report,registered_only,send_email" {
		t.Fatalf("tasks: %v", names)
	}
	e.expect("GET", "/api/v1/tasks?x=1", "", nil, 400, "invalid_argument")
}

func TestQueuesPauseResumeKeepsConfig(t *testing.T) {
	e := newEnv(t, NoAuth())
	ctx := context.Background()
	if err := e.be.PutQueueConfig(ctx, core.QueueConfig{Queue: "mail", RetentionTTL: 48 * time.Hour, CleanupLimit: 17}); err != nil {
		t.Fatal(err)
	}
	var q queueView
	e.do("POST", "/api/v1/queues/mail/pause", "", nil, &q)
	if !q.Paused || q.RetentionTTL != "48h0m0s" || q.CleanupLimit != 17 || q.Jobs[core.StateQueued] != 2 {
		t.Fatalf("pause: %+v", q)
	}
	cfg, _ := e.be.GetQueueConfig(ctx, "mail")
	if !cfg.Paused || cfg.RetentionTTL != 48*time.Hour || cfg.CleanupLimit != 17 {
		t.Fatalf("stored after pause: %+v", cfg)
	}
	// A paused queue hands out nothing.
	if js, err := e.be.Claim(ctx, core.ClaimRequest{Queue: "mail", WorkerID: "w", Limit: 10, LeaseTTL: time.Minute}); err != nil || len(js) != 0 {
		t.Fatalf("claim from a paused queue: %d %v", len(js), err)
	}
	var list struct{ Queues []queueView }
	e.do("GET", "/api/v1/queues", "", nil, &list)
	if len(list.Queues) != 2 || list.Queues[0].Queue != "mail" || !list.Queues[0].Paused || list.Queues[1].Paused || list.Queues[1].Jobs[core.StateRunning] != 1 {
		t.Fatalf("queues: %+v", list)
	}
	e.do("POST", "/api/v1/queues/mail/resume", "", nil, &q)
	cfg, _ = e.be.GetQueueConfig(ctx, "mail")
	if q.Paused || cfg.Paused || cfg.RetentionTTL != 48*time.Hour || cfg.CleanupLimit != 17 {
		t.Fatalf("resume: %+v %+v", q, cfg)
	}
	// A queue that has nothing yet can be paused ahead of its first job.
	e.do("POST", "/api/v1/queues/future/pause", "", nil, &q)
	if !q.Paused {
		t.Fatalf("pause of a new queue: %+v", q)
	}
	q = queueView{}
	e.do("GET", "/api/v1/queues/future", "", nil, &q)
	if !q.Paused || len(q.Jobs) != 0 {
		t.Fatalf("get: %+v", q)
	}
	e.expect("POST", "/api/v1/queues/a.b/pause", "", nil, 400, "invalid_argument")
	e.expect("GET", "/api/v1/queues/mail/pause", "", nil, 405, "method_not_allowed")
}

func TestCrossOriginBrowserPostRefused(t *testing.T) {
	e := newEnv(t, NoAuth())
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/jobs/"+e.ids.queued+"/cancel", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var eb errorBody
	_ = json.NewDecoder(resp.Body).Decode(&eb)
	resp.Body.Close()
	if resp.StatusCode != 403 || eb.Error.Code != "cross_origin" {
		t.Fatalf("cross-site POST: %d %+v", resp.StatusCode, eb)
	}
	if j, _ := e.be.GetJob(context.Background(), e.ids.queued); j.State != core.StateQueued {
		t.Fatal("cross-site POST changed the job")
	}
	// Cross-site reads are not state changes and stay allowed.
	req, _ = http.NewRequest("GET", e.srv.URL+"/api/v1/jobs", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err = e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("cross-site GET: %d", resp.StatusCode)
	}
}

func TestRouterMergesBackends(t *testing.T) {
	clock := core.NewManualClock(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
	a := mem.New(mem.Options{Clock: clock})
	b := mem.New(mem.Options{Clock: clock})
	defer a.Close()
	defer b.Close()
	r := core.NewRouter(a)
	if err := r.Register("second", b); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("alias", b); err != nil {
		t.Fatal(err)
	}
	if err := r.Route("reports", "second"); err != nil {
		t.Fatal(err)
	}
	h, err := New(Options{Router: r, Auth: NoAuth(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := newTestServer(t, h)
	e := &env{t: t, clock: clock, srv: srv}
	var ids []string
	for i := 0; i < 6; i++ {
		q := "mail"
		if i%2 == 1 {
			q = "reports"
		}
		var res enqueueView
		e.do("POST", "/api/v1/jobs", "", map[string]any{"task": "t", "queue": q}, &res)
		ids = append(ids, res.Job.ID)
		clock.Advance(time.Millisecond)
	}
	if js, _ := b.ListJobs(context.Background(), core.JobFilter{}); len(js.Jobs) != 3 {
		t.Fatalf("second backend holds %d jobs", len(js.Jobs))
	}
	var got []string
	for cursor := ""; ; {
		var p jobPageView
		e.do("GET", "/api/v1/jobs?limit=4&cursor="+cursor, "", nil, &p)
		for _, j := range p.Jobs {
			got = append(got, j.ID)
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	if strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Fatalf("merged listing\n got %v\nwant %v", got, ids)
	}
	e.expect("POST", "/api/v1/jobs/"+ids[1]+"/cancel", "", nil, 200, "")
	if j, _ := b.GetJob(context.Background(), ids[1]); j.State != core.StateCancelled {
		t.Fatalf("cancel through the router: %s", j.State)
	}
	e.expect("PUT", "/api/v1/tasks/t/config", "", map[string]any{"max_in_flight": 9}, 200, "")
	for _, be := range []core.QueueBackend{a, b} {
		if c, err := be.GetTaskConfig(context.Background(), "t"); err != nil || c.MaxInFlight != 9 {
			t.Fatalf("task config on every backend: %+v %v", c, err)
		}
	}
	e.expect("POST", "/api/v1/queues/reports/pause", "", nil, 200, "")
	if c, _ := b.GetQueueConfig(context.Background(), "reports"); !c.Paused {
		t.Fatal("pause went to the wrong backend")
	}
	var qs struct{ Queues []queueView }
	e.do("GET", "/api/v1/queues", "", nil, &qs)
	if len(qs.Queues) != 2 || qs.Queues[0].Jobs[core.StateQueued] != 3 || !qs.Queues[1].Paused {
		t.Fatalf("queues: %+v", qs)
	}
	var task taskView
	e.do("GET", "/api/v1/tasks/t", "", nil, &task)
	if task.Jobs[core.StateQueued] != 5 || task.Jobs[core.StateCancelled] != 1 {
		t.Fatalf("task over the router: %+v", task)
	}
}

func TestErrorMapping(t *testing.T) {
	for err, want := range map[error]int{
		core.ErrNotFound: 404, core.ErrInvalidArgument: 400, core.ErrInvalidState: 409,
		core.ErrIdempotencyConflict: 409, core.ErrRateLimited: 429, core.ErrLeaseLost: 409,
		core.ErrUnsupported: 501, core.ErrClosed: 503, fmt.Errorf("disk on fire"): 500,
		fmt.Errorf("wrapped: %w", core.ErrNotFound): 404,
	} {
		if got, _, _ := classify(err); got != want {
			t.Errorf("%v: %d, want %d", err, got, want)
		}
	}
	// Internal errors are not shown to the caller.
	e := newEnv(t, NoAuth())
	_ = e.be.Close()
	e.expect("GET", "/api/v1/jobs", "", nil, 503, "closed")
}

func TestBodyLimitAndHead(t *testing.T) {
	e := newEnv(t, NoAuth(), func(o *Options) { o.MaxBodyBytes = 64 })
	e.expect("POST", "/api/v1/jobs", "", `{"task":"x","payload":"`+strings.Repeat("a", 100)+`"}`, 413, "body_too_large")
	e.expect("POST", "/api/v1/jobs/"+e.ids.queued+"/cancel", "", `{"reason":"`+strings.Repeat("a", 100)+`"}`, 413, "body_too_large")
	e.expect("POST", "/api/v1/jobs", "", `{"task":"x"}`, 201, "")
	resp, body := e.do("HEAD", "/api/v1/jobs", "", nil, nil)
	if resp.StatusCode != 200 || len(body) != 0 {
		t.Fatalf("HEAD: %d %d bytes", resp.StatusCode, len(body))
	}
}
