package admin

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

// failMany enqueues n jobs of queue and fails each for good with msg.
func failMany(t *testing.T, e *env, queue, msg string, n int) []string {
	t.Helper()
	ctx := context.Background()
	reqs := make([]core.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = core.EnqueueRequest{Queue: queue, Task: "bulk_task", Headers: map[string]string{"tenant": "acme"}}
	}
	if _, err := e.be.Enqueue(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	js, err := e.be.Claim(ctx, core.ClaimRequest{Queue: queue, WorkerID: "w-bulk", Limit: n, LeaseTTL: time.Minute})
	if err != nil || len(js) != n {
		t.Fatalf("claim: %d %v", len(js), err)
	}
	ids := make([]string, n)
	for i, j := range js {
		if _, err := e.be.Fail(ctx, core.Failure{Lease: j.Lease, Error: msg, Terminal: true}); err != nil {
			t.Fatal(err)
		}
		ids[i] = j.ID
	}
	return ids
}

func (e *env) states(queue string) map[core.JobState]int64 {
	e.t.Helper()
	c, err := e.be.CountJobs(context.Background(), core.JobFilter{Queue: queue})
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range c {
		if v == 0 {
			delete(c, k)
		}
	}
	return c
}

func TestBulkPreviewAndConfirm(t *testing.T) {
	e := newEnv(t, NoAuth())
	failMany(t, e, "bulk", "boom", 25)
	before := e.states("bulk")

	// Hostile or unconfirmed requests get a clear 4xx and change nothing.
	for _, c := range []struct {
		path   string
		body   any
		status int
		code   string
	}{
		{"/bulk/retry", map[string]any{"filter": map[string]any{"queue": "bulk"}}, 400, "invalid_argument"},
		{"/bulk/retry", map[string]any{"filter": map[string]any{}, "confirm_count": 1000}, 400, "invalid_argument"},
		{"/bulk/retry", map[string]any{"filter": map[string]any{"queue": "bulk"}, "confirm_count": 24}, 409, "count_changed"},
		{"/bulk/retry", map[string]any{"filter": map[string]any{"ids": strings.Split(strings.Repeat("x,", 100_000), ",")}, "confirm_count": 1}, 400, "invalid_argument"},
		{"/bulk/retry", map[string]any{"filter": map[string]any{"queue": "bulk", "created_from": "2026-02-01T00:00:00Z", "created_to": "2026-01-01T00:00:00Z"}, "confirm_count": 25}, 400, "invalid_argument"},
		{"/bulk/retry", map[string]any{"filter": map[string]any{"queue": "bulk", "finished_from": "last tuesday"}, "confirm_count": 25}, 400, "invalid_argument"},
		{"/bulk/retry", map[string]any{"filter": map[string]any{"header_value": "<script>"}, "confirm_count": 25}, 400, "invalid_argument"},
		{"/bulk/retry", map[string]any{"filter": map[string]any{"queue": "bulk"}, "confirm_count": 25, "force": true}, 400, "invalid_argument"},
		{"/bulk/retry", map[string]any{"filter": map[string]any{"queue": "bulk"}, "confirm_count": 25, "limit": 5000}, 400, "invalid_argument"},
		{"/bulk/retry", map[string]any{"filter": map[string]any{"queue": "bulk"}, "confirm_count": 25, "cursor": strings.Repeat("c", 300)}, 400, "invalid_argument"},
		{"/bulk/retry", map[string]any{"filter": map[string]any{"queue": "bulk"}, "confirm_count": 25, "colour": "red"}, 400, "invalid_argument"},
		{"/bulk/nuke", map[string]any{"filter": map[string]any{"queue": "bulk"}, "confirm_count": 25}, 404, "not_found"},
	} {
		e.expect("POST", apiPrefix+c.path, "", c.body, c.status, c.code)
	}
	if got := e.states("bulk"); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("refused requests changed the queue: %v, was %v", got, before)
	}

	// Preview, then confirm with the previewed count.
	var pv bulkView
	e.do("POST", apiPrefix+"/bulk/retry/preview", "", map[string]any{"filter": map[string]any{"queue": "bulk", "header_key": "tenant", "header_value": "acme"}}, &pv)
	if pv.Matched != 25 || !pv.DryRun || pv.MatchAll || pv.Counts[core.StateFailed] != 25 {
		t.Fatalf("preview: %+v", pv)
	}
	var res bulkView
	e.do("POST", apiPrefix+"/bulk/retry", "", map[string]any{"filter": map[string]any{"queue": "bulk", "header_key": "tenant", "header_value": "acme"}, "confirm_count": pv.Matched, "limit": 7}, &res)
	if res.Changed != 25 || res.Matched != 25 || !res.Done || res.Cursor != "" {
		t.Fatalf("confirm: %+v", res)
	}
	if got := e.states("bulk"); got[core.StateQueued] != 25 || len(got) != 1 {
		t.Fatalf("after the bulk retry: %v", got)
	}

	// A filter that matches every job needs confirm_all; the confirm
	// visits no more jobs than it confirmed.
	e.do("POST", apiPrefix+"/bulk/cancel/preview", "", map[string]any{"filter": map[string]any{}}, &pv)
	if !pv.MatchAll || pv.Matched != 28 { // 25 + queued + hostile + running
		t.Fatalf("match-all preview: %+v", pv)
	}
	e.do("POST", apiPrefix+"/bulk/cancel", "", map[string]any{"filter": map[string]any{}, "confirm_count": 30, "confirm_all": true, "reason": "maintenance"}, &res)
	if res.Changed != 28 || !res.Done {
		t.Fatalf("cancel all: %+v", res)
	}
	j, _ := e.be.GetJob(context.Background(), e.ids.queued)
	if j.State != core.StateCancelled || j.LastError != "maintenance" {
		t.Fatalf("cancelled job: %s %q", j.State, j.LastError)
	}

	// Bounded by the confirmed count: confirming 10 of 25 changes 10.
	e.do("POST", apiPrefix+"/bulk/delete", "", map[string]any{"filter": map[string]any{"queue": "bulk"}, "confirm_count": 25, "limit": 10}, &res)
	if res.Changed != 25 || !res.Done {
		t.Fatalf("bulk delete: %+v", res)
	}
	if got := e.states("bulk"); len(got) != 0 {
		t.Fatalf("after the bulk delete: %v", got)
	}
}

func TestBulkStopsAtTheConfirmedCount(t *testing.T) {
	e := newEnv(t, NoAuth())
	failMany(t, e, "bulk", "boom", 12)
	old := bulkBudget
	t.Cleanup(func() { bulkBudget = old })
	// A confirm visits at most the confirmed count, even when the budget
	// would allow more; the answer's cursor continues it.
	var res bulkView
	body := map[string]any{"filter": map[string]any{"queue": "bulk", "states": []string{"failed"}}, "confirm_count": 12, "limit": 5}
	e.do("POST", apiPrefix+"/bulk/retry", "", body, &res)
	if res.Changed != 12 || !res.Done {
		t.Fatalf("retry: %+v", res)
	}
	// With no budget each request does one step and answers a cursor.
	failMany(t, e, "slow", "boom", 6)
	bulkBudget = 0
	body = map[string]any{"filter": map[string]any{"queue": "slow"}, "confirm_count": 6, "limit": 4}
	changed, i := 0, 0
	for ; i < 5; i++ {
		e.do("POST", apiPrefix+"/bulk/retry", "", body, &res)
		changed += res.Changed
		if res.Done {
			break
		}
		body["cursor"] = res.Cursor
	}
	if changed != 6 || !res.Done || i != 1 {
		t.Fatalf("with no budget: changed %d in %d more requests, %+v", changed, i, res)
	}
}

func TestDeleteEndpoints(t *testing.T) {
	e := newEnv(t, NoAuth())
	ctx := context.Background()
	e.expect("DELETE", apiPrefix+"/jobs/"+e.ids.running, "", nil, 409, "invalid_state")
	if j, err := e.be.GetJob(ctx, e.ids.running); err != nil || j.State != core.StateRunning {
		t.Fatalf("a refused delete changed the job: %+v %v", j, err)
	}
	e.expect("DELETE", apiPrefix+"/jobs/"+e.ids.running+"?force=yes", "", nil, 400, "invalid_argument")
	e.expect("DELETE", apiPrefix+"/jobs/"+e.ids.running+"?force=true", "", nil, 200, "")
	e.expect("DELETE", apiPrefix+"/jobs/"+e.ids.running, "", nil, 404, "not_found")
	e.expect("DELETE", apiPrefix+"/jobs/"+e.ids.succeeded, "", nil, 200, "")
	if _, err := e.be.Checkpoints(ctx, e.ids.succeeded); err == nil {
		t.Fatal("the deleted job's checkpoints are still readable")
	}

	e.expect("DELETE", apiPrefix+"/queues/mail", "", nil, 400, "invalid_argument")
	e.expect("DELETE", apiPrefix+"/queues/mail?confirm=reports", "", nil, 400, "invalid_argument")
	if got := e.states("mail"); len(got) == 0 {
		t.Fatal("a refused queue delete deleted jobs")
	}
	var v queueDeleteView
	e.do("DELETE", apiPrefix+"/queues/mail?confirm=mail", "", nil, &v)
	if v.Deleted != 3 || !v.Done {
		t.Fatalf("queue delete: %+v", v)
	}
	if got := e.states("mail"); len(got) != 0 {
		t.Fatalf("jobs left: %v", got)
	}
}

func TestSearchRunsAndTasksEndpoints(t *testing.T) {
	e := newEnv(t, NoAuth())
	ctx := context.Background()
	script := `<script>alert("x")</script>`
	res, err := e.be.Enqueue(ctx, []core.EnqueueRequest{{Queue: "mail", Task: "send_email", Headers: map[string]string{"note": script}}})
	if err != nil {
		t.Fatal(err)
	}
	var page jobPageView
	e.do("GET", apiPrefix+"/jobs?header_key=note&header_value="+url.QueryEscape(script), "", nil, &page)
	if len(page.Jobs) != 1 || page.Jobs[0].ID != res[0].Job.ID {
		t.Fatalf("header search: %+v", page)
	}
	_, raw := e.do("GET", apiPrefix+"/jobs?header_key=note", "", nil, nil)
	if strings.Contains(string(raw), "<script>") {
		t.Fatalf("the API answered markup unescaped: %s", raw)
	}
	e.do("GET", apiPrefix+"/jobs?id_prefix="+e.ids.failed, "", nil, &page)
	if len(page.Jobs) != 1 || page.Jobs[0].ID != e.ids.failed {
		t.Fatalf("id prefix search: %+v", page)
	}
	e.do("GET", apiPrefix+"/jobs?ids="+e.ids.failed+","+e.ids.queued+"&ids="+e.ids.running, "", nil, &page)
	if len(page.Jobs) != 3 {
		t.Fatalf("ids search: %d jobs", len(page.Jobs))
	}
	e.expect("GET", apiPrefix+"/jobs?ids="+strings.Repeat("a,", 2000), "", nil, 400, "invalid_argument")
	e.expect("GET", apiPrefix+"/jobs?finished_from=2026-02-01T00:00:00Z&finished_to=2026-01-01T00:00:00Z", "", nil, 400, "invalid_argument")
	e.expect("GET", apiPrefix+"/jobs?created_to=soon", "", nil, 400, "invalid_argument")
	var cv countsView[core.JobState]
	e.do("GET", apiPrefix+"/counts/jobs?finished_from=2000-01-01T00:00:00Z", "", nil, &cv)
	if cv.Total != 2 || cv.Counts[core.StateSucceeded] != 1 || cv.Counts[core.StateFailed] != 1 {
		t.Fatalf("finished count: %+v", cv)
	}

	var runs runPageView
	e.do("GET", apiPrefix+"/runs?queue=mail", "", nil, &runs)
	if len(runs.Runs) != 2 || runs.Runs[0].Queue != "mail" || runs.Runs[0].Task != "send_email" {
		t.Fatalf("runs of mail: %+v", runs)
	}
	e.do("GET", apiPrefix+"/runs?limit=1", "", nil, &runs)
	if len(runs.Runs) != 1 || runs.Next == "" {
		t.Fatalf("first page of runs: %+v", runs)
	}
	next := runs.Next
	e.do("GET", apiPrefix+"/runs?limit=5&cursor="+url.QueryEscape(next), "", nil, &runs)
	if len(runs.Runs) != 2 || runs.Next != "" {
		t.Fatalf("second page of runs: %+v", runs)
	}
	var rc countsView[core.RunStatus]
	e.do("GET", apiPrefix+"/counts/runs?status=failed,running", "", nil, &rc)
	if rc.Total != 2 || rc.Counts[core.RunFailed] != 1 || rc.Counts[core.RunRunning] != 1 {
		t.Fatalf("run counts: %+v", rc)
	}
	var rv runView
	e.do("GET", apiPrefix+"/runs/"+next, "", nil, &rv)
	if rv.ID != next {
		t.Fatalf("get run: %+v", rv)
	}

	if err := e.be.PutTaskConfig(ctx, core.TaskConfig{Task: "config_only", MaxInFlight: 2}); err != nil {
		t.Fatal(err)
	}
	var tl struct{ Tasks []taskView }
	e.do("GET", apiPrefix+"/tasks", "", nil, &tl)
	var names []string
	for _, tv := range tl.Tasks {
		names = append(names, tv.Task)
	}
	if fmt.Sprint(names) != "[build_report config_only send_email]" {
		t.Fatalf("tasks: %v", names)
	}
}

func TestActivityFromTheStore(t *testing.T) {
	e := newEnv(t, NoAuth())
	ctx := context.Background()
	start := e.clock.Now().Truncate(time.Minute).Add(time.Minute)
	e.clock.Set(start.Add(10 * time.Second))
	// Minute 0: 3 succeed, 2 fail for good, and a sixth starts that fails in
	// minute 1 and is queued again (counted by its run's start).
	if _, err := e.be.Enqueue(ctx, make6("act")); err != nil {
		t.Fatal(err)
	}
	js, _ := e.be.Claim(ctx, core.ClaimRequest{Queue: "act", WorkerID: "w", Limit: 6, LeaseTTL: time.Hour})
	for i, j := range js {
		switch {
		case i < 3:
			_, _ = e.be.Complete(ctx, []core.Completion{{Lease: j.Lease}})
		case i < 5:
			_, _ = e.be.Fail(ctx, core.Failure{Lease: j.Lease, Error: "bad", Terminal: true})
		}
	}
	if len(js) != 6 {
		t.Fatalf("claimed %d", len(js))
	}
	e.clock.Set(start.Add(70 * time.Second))
	// The sixth's run started in minute 0 and fails in minute 1.
	if st, err := e.be.Fail(ctx, core.Failure{Lease: js[5].Lease, Error: "flaky"}); err != nil || st != core.StateQueued {
		t.Fatalf("retryable failure: %s %v", st, err)
	}
	e.clock.Set(start.Add(2*time.Minute + 5*time.Second))

	var a activityView
	e.do("GET", apiPrefix+"/queues/act/activity", "", nil, &a)
	if len(a.Minutes) != activityMinutes || !a.To.Equal(start.Add(3*time.Minute)) {
		t.Fatalf("window: %d minutes to %s", len(a.Minutes), a.To)
	}
	m0, m1 := a.Minutes[activityMinutes-3], a.Minutes[activityMinutes-2]
	if !m0.Start.Equal(start) || m0.Completed != 3 || m0.Failed != 2 || m0.Retried != 1 || m1.Retried != 0 || m1.Completed != 0 {
		t.Fatalf("minutes: %+v %+v", m0, m1)
	}
	last := a.Depth[len(a.Depth)-1]
	if last.Jobs != 1 || !last.At.Equal(e.clock.Now()) {
		t.Fatalf("depth now: %+v", last)
	}
	if first := a.Depth[0]; first.Jobs != 0 {
		t.Fatalf("depth an hour ago: %+v", first)
	}
}

// TestActivityRetriedIsExact seeds one minute of failures of every kind
// and checks the chart's Retried against them and against the store's
// own run counts: a failed or lost run counts when its job had another
// attempt or is queued for one (A, C, E, G), not when its job failed for
// good (B, F) or was cancelled before its next attempt (D).
func TestActivityRetriedIsExact(t *testing.T) {
	e := newEnv(t, NoAuth())
	ctx := context.Background()
	start := e.clock.Now().Truncate(time.Minute).Add(time.Minute)
	e.clock.Set(start.Add(10 * time.Second))
	const q = "rx"
	one := func(maxAttempts int, ttl time.Duration) core.Job {
		t.Helper()
		if _, err := e.be.Enqueue(ctx, []core.EnqueueRequest{{Queue: q, Task: "act_task", MaxAttempts: maxAttempts}}); err != nil {
			t.Fatal(err)
		}
		js, err := e.be.Claim(ctx, core.ClaimRequest{Queue: q, WorkerID: "w", Limit: 1, LeaseTTL: ttl})
		if err != nil || len(js) != 1 {
			t.Fatalf("claim: %d jobs, %v", len(js), err)
		}
		return js[0]
	}
	fail := func(j core.Job, retryAt time.Time, want core.JobState) {
		t.Helper()
		if st, err := e.be.Fail(ctx, core.Failure{Lease: j.Lease, Error: "boom", RetryAt: retryAt}); err != nil || st != want {
			t.Fatalf("fail %s: %s, %v; want %s", j.ID, st, err, want)
		}
	}
	later := e.clock.Now().Add(time.Hour)
	a := one(3, time.Hour) // fails, runs again and succeeds
	fail(a, e.clock.Now(), core.StateQueued)
	js, err := e.be.Claim(ctx, core.ClaimRequest{Queue: q, WorkerID: "w", Limit: 1, LeaseTTL: time.Hour})
	if err != nil || len(js) != 1 || js[0].ID != a.ID {
		t.Fatalf("claim of A again: %v, %v", js, err)
	}
	if _, err := e.be.Complete(ctx, []core.Completion{{Lease: js[0].Lease}}); err != nil {
		t.Fatal(err)
	}
	fail(one(1, time.Hour), later, core.StateFailed) // B
	fail(one(3, time.Hour), later, core.StateQueued) // C
	d := one(3, time.Hour)
	fail(d, later, core.StateQueued)
	if _, err := e.be.Cancel(ctx, d.ID, "enough"); err != nil {
		t.Fatal(err)
	}
	one(2, 20*time.Second) // E: its lease expires with an attempt left
	one(1, 20*time.Second) // F: its lease expires on its last attempt
	e.clock.Set(start.Add(40 * time.Second))
	if res, err := e.be.Rescue(ctx, core.RescueRequest{Limit: 10}); err != nil || res.Requeued < 1 || res.Failed != 1 { // the fixture's running job may be requeued too
		t.Fatalf("rescue: %+v, %v", res, err)
	}
	g := one(1, time.Hour) // fails for good, then an operator retries it
	fail(g, later, core.StateFailed)
	if _, err := e.be.Retry(ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	e.clock.Set(start.Add(90 * time.Second))

	var v activityView
	e.do("GET", apiPrefix+"/queues/"+q+"/activity", "", nil, &v)
	m := v.Minutes[activityMinutes-2]
	if !m.Start.Equal(start) || m.Retried != 4 || m.Failed != 2 || m.Completed != 1 {
		t.Fatalf("minute %+v, want 1 completed, 2 failed, 4 retried", m)
	}
	var total int64
	for _, m := range v.Minutes {
		total += m.Retried
	}
	// The store's own count: the failed and lost runs, less the three
	// that ended their job's attempts (B, D, F).
	runs, err := e.be.CountRuns(ctx, core.RunFilter{Queue: q, Statuses: []core.RunStatus{core.RunFailed, core.RunLost}})
	if err != nil {
		t.Fatal(err)
	}
	if n := runs[core.RunFailed] + runs[core.RunLost]; total != n-3 || runs[core.RunLost] != 2 {
		t.Fatalf("chart retried %d in all; the store has runs %v", total, runs)
	}
}

func make6(queue string) []core.EnqueueRequest {
	out := make([]core.EnqueueRequest, 6)
	for i := range out {
		out[i] = core.EnqueueRequest{Queue: queue, Task: "act_task", MaxAttempts: 3}
	}
	return out
}

// bareBackend hides a backend's optional capabilities.
type bareBackend struct{ core.QueueBackend }

func TestOperationsUnsupported(t *testing.T) {
	be := mem.New(mem.Options{})
	t.Cleanup(func() { _ = be.Close() })
	h, err := New(Options{Backend: bareBackend{be}, Auth: NoAuth(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, be: be, h: h, srv: newTestServer(t, h)}
	for _, c := range []struct{ method, path string }{
		{"DELETE", "/jobs/01KDYAK43N3TP669B34GH42QG8"},
		{"DELETE", "/queues/q?confirm=q"},
		{"GET", "/runs"},
		{"GET", "/runs/01KDYAK43N3TP669B34GH42QG8.1"},
		{"GET", "/counts/runs"},
		{"GET", "/counts/jobs?header_key=k"},
		{"GET", "/jobs?id_prefix=01"},
		{"GET", "/queues/q/activity"},
		{"POST", "/bulk/retry/preview"},
	} {
		var body any
		if c.method == "POST" {
			body = map[string]any{"filter": map[string]any{"queue": "q"}}
		}
		e.expect(c.method, apiPrefix+c.path, "", body, 501, "unsupported")
	}
	// What every backend offers still works, and tasks fall back to a scan.
	e.expect("GET", apiPrefix+"/jobs", "", nil, 200, "")
	e.expect("GET", apiPrefix+"/tasks", "", nil, 200, "")
	// The dashboard says what it cannot show instead of failing.
	for path, want := range map[string]string{"/queues/q": "no chart", "/runs": "cannot list runs", "/tasks": "Tasks", "/failed": "No failed jobs"} {
		if code, html := getPage(t, e.srv.Client(), e.srv.URL+path); code != 200 || !strings.Contains(html, want) {
			t.Errorf("%s on a store without the capabilities: %d, lacks %q", path, code, want)
		}
	}
	if code, _ := getPage(t, e.srv.Client(), e.srv.URL+"/queues/q/activity.svg"); code != 501 {
		t.Errorf("activity.svg on a store without search: %d", code)
	}
}

// TestOperationsAcrossARouter runs the operations over two stores behind a
// router: listings merge, counts add up, and a bulk action continues from
// one store to the next through its cursor.
func TestOperationsAcrossARouter(t *testing.T) {
	ctx := context.Background()
	a, b := mem.New(mem.Options{}), mem.New(mem.Options{})
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	r := core.NewRouter(a)
	if err := r.Register("other", b); err != nil {
		t.Fatal(err)
	}
	if err := r.Route("far", "other"); err != nil {
		t.Fatal(err)
	}
	h, err := New(Options{Router: r, Auth: NoAuth(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, be: a, h: h, srv: newTestServer(t, h)}
	for _, q := range []struct {
		be    core.QueueBackend
		queue string
	}{{a, "near"}, {b, "far"}} {
		e2 := &env{t: t, be: q.be.(*mem.Backend)}
		failMany(t, e2, q.queue, "boom "+q.queue, 6)
	}
	old := bulkBudget
	bulkBudget = 0
	t.Cleanup(func() { bulkBudget = old })

	var pv bulkView
	body := map[string]any{"filter": map[string]any{"task": "bulk_task"}, "limit": 4}
	e.do("POST", apiPrefix+"/bulk/retry/preview", "", body, &pv)
	if pv.Matched != 12 {
		t.Fatalf("preview over two stores: %+v", pv)
	}
	body["confirm_count"] = pv.Matched
	body["cursor"] = "7~x"
	e.expect("POST", apiPrefix+"/bulk/retry", "", body, 400, "invalid_argument")
	delete(body, "cursor")
	changed, calls := 0, 0
	for ; calls < 10; calls++ {
		var res bulkView
		if resp, raw := e.do("POST", apiPrefix+"/bulk/retry", "", body, &res); resp.StatusCode != 200 {
			t.Fatalf("bulk step %d: %d %s", calls, resp.StatusCode, raw)
		}
		changed += res.Changed
		if res.Done {
			break
		}
		if !strings.Contains(res.Cursor, "~") {
			t.Fatalf("a cursor over two stores names its store: %+v", res)
		}
		body["cursor"] = res.Cursor
	}
	if changed != 12 || calls < 3 {
		t.Fatalf("bulk over two stores: %d changed in %d calls", changed, calls+1)
	}
	for _, be := range []*mem.Backend{a, b} {
		c, _ := be.CountJobs(ctx, core.JobFilter{})
		if c[core.StateQueued] != 6 || c[core.StateFailed] != 0 {
			t.Fatalf("a store after the bulk retry: %v", c)
		}
	}

	var cv countsView[core.JobState]
	e.do("GET", apiPrefix+"/counts/jobs?task=bulk_task&header_key=tenant", "", nil, &cv)
	if cv.Total != 12 {
		t.Fatalf("counts over two stores: %+v", cv)
	}
	var runs runPageView
	e.do("GET", apiPrefix+"/runs?limit=5", "", nil, &runs)
	if len(runs.Runs) != 5 || runs.Next == "" {
		t.Fatalf("merged runs: %+v", runs)
	}
	var rv runView
	e.do("GET", apiPrefix+"/runs/"+runs.Runs[0].ID, "", nil, &rv)
	if rv.ID != runs.Runs[0].ID {
		t.Fatalf("get run from either store: %+v", rv)
	}
	// With no budget each request runs one step: the jobs, then the config.
	var del queueDeleteView
	deleted := int64(0)
	for i := 0; i < 3 && !del.Done; i++ {
		e.do("DELETE", apiPrefix+"/queues/far?confirm=far", "", nil, &del)
		deleted += del.Deleted
	}
	if deleted != 6 || !del.Done {
		t.Fatalf("delete a routed queue: %+v", del)
	}
	if c, _ := b.CountJobs(ctx, core.JobFilter{}); c[core.StateQueued] != 0 {
		t.Fatalf("the routed store after the queue delete: %v", c)
	}
}

// TestActivitySameFromEveryReplica: the activity chart comes from the
// store, not from what one admin process saw, so a handler started after
// the activity answers it exactly as one that served pages through it,
// both as JSON and as the dashboard's chart.
func TestActivitySameFromEveryReplica(t *testing.T) {
	e := newEnv(t, NoAuth())
	ctx := context.Background()
	start := e.clock.Now().Truncate(time.Minute).Add(time.Minute)
	e.clock.Set(start.Add(10 * time.Second))
	e.do("GET", apiPrefix+"/queues/act/activity", "", nil, nil)
	if _, err := e.be.Enqueue(ctx, make6("act")); err != nil {
		t.Fatal(err)
	}
	js, err := e.be.Claim(ctx, core.ClaimRequest{Queue: "act", WorkerID: "w", Limit: 6, LeaseTTL: time.Hour})
	if err != nil || len(js) != 6 {
		t.Fatalf("claimed %d, %v", len(js), err)
	}
	for i, j := range js {
		e.clock.Advance(20 * time.Second)
		switch {
		case i < 3:
			_, err = e.be.Complete(ctx, []core.Completion{{Lease: j.Lease}})
		case i < 5:
			_, err = e.be.Fail(ctx, core.Failure{Lease: j.Lease, Error: "bad", Terminal: true})
		default:
			_, err = e.be.Fail(ctx, core.Failure{Lease: j.Lease, Error: "flaky"})
		}
		if err != nil {
			t.Fatal(err)
		}
		e.do("GET", apiPrefix+"/queues/act/activity", "", nil, nil)
	}
	h2, err := New(Options{Backend: e.be, Auth: NoAuth(), Logger: quietLogger(), Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	srv2 := httptest.NewServer(h2)
	defer srv2.Close()
	for _, p := range []string{apiPrefix + "/queues/act/activity", "/queues/act/activity.svg"} {
		codeA, a := getPage(t, e.srv.Client(), e.srv.URL+p)
		codeB, b := getPage(t, srv2.Client(), srv2.URL+p)
		if codeA != http.StatusOK || codeB != http.StatusOK {
			t.Fatalf("GET %s: %d and %d", p, codeA, codeB)
		}
		if a != b {
			t.Errorf("%s differs between the handler that saw the activity and a new one:\n%s\n---\n%s", p, a, b)
		}
		if len(a) == 0 {
			t.Errorf("%s is empty", p)
		}
	}
	var a activityView
	e.do("GET", apiPrefix+"/queues/act/activity", "", nil, &a)
	var done, failed, retried int
	for _, m := range a.Minutes {
		done, failed, retried = done+int(m.Completed), failed+int(m.Failed), retried+int(m.Retried)
	}
	if done != 3 || failed != 2 || retried != 1 {
		t.Fatalf("the chart counts %d completed, %d failed, %d retried, want 3, 2, 1", done, failed, retried)
	}
}
