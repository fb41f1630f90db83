package e2e_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/admin"
	"github.com/boson-go/boson/core"
	"github.com/boson-go/boson/observability/bosonprom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestAdminOverEveryBackend serves the admin handler (JSON API, dashboard
// and, beside it, /metrics, mounted as `boson serve` mounts them) over
// every backend of flowBackends, each part on a fresh store seeded with
// the same jobs, and checks exact answers: what the store holds must come
// out of every surface unchanged.
func TestAdminOverEveryBackend(t *testing.T) {
	for _, f := range flowBackends() {
		t.Run(f.Name, func(t *testing.T) {
			t.Run("API", func(t *testing.T) { adminAPI(newAdminEnv(t, f)) })
			t.Run("Dashboard", func(t *testing.T) { adminDashboard(newAdminEnv(t, f)) })
			t.Run("Metrics", func(t *testing.T) { adminMetrics(newAdminEnv(t, f)) })
		})
	}
}

// The handler's bearer tokens: one that reads, one that also changes.
const (
	adminReadToken = "e2e-read-token-0123456789"
	adminToken     = "e2e-admin-token-0123456789"
)

// adminEnv is a handler, with /metrics beside it, over a fresh seeded
// store, served on a loopback test server.
type adminEnv struct {
	*env
	h   *admin.Handler
	srv *httptest.Server
	fx  adminFixture
	// replica opens another handle on the same store (a second
	// connection for a durable store, the same backend otherwise).
	replica func() core.QueueBackend
}

func newAdminEnv(t *testing.T, f backendFactory) *adminEnv {
	a := &adminEnv{}
	if f.Durable && f.Open != nil && f.Locator != nil {
		loc := f.Locator(t)
		a.env = newEnvOn(t, f, func(t testing.TB, c core.Clock) core.QueueBackend { return f.Open(t, c, loc, true) })
		a.replica = func() core.QueueBackend { return f.Open(t, a.clock, loc, false) }
	} else {
		a.env = newEnv(t, f)
		a.replica = func() core.QueueBackend { return a.b }
	}
	a.clock.Set(epoch.Add(10 * time.Second))
	a.fx = seedAdmin(a.env)
	a.h = newAdminHandler(a.env, a.b)
	mux := http.NewServeMux()
	mux.Handle("/metrics", a.h.Protect(admin.PermRead, newMetricsHandler(a.env, a.b)))
	mux.Handle("/", a.h)
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

// newAdminHandler builds the handler over b with the test's tokens.
func newAdminHandler(e *env, b core.QueueBackend) *admin.Handler {
	h, err := admin.New(admin.Options{Backend: b, Auth: admin.Tokens([]string{adminReadToken}, []string{adminToken}),
		Logger: quiet, Clock: e.clock})
	e.must(err)
	return h
}

// newMetricsHandler serves b's queue gauges in the Prometheus text format
// from a registry of their own, as `boson serve` does, but read from the
// store on every scrape (no cache) so that a change shows at once.
func newMetricsHandler(e *env, b core.QueueBackend) http.Handler {
	c, err := bosonprom.New(bosonprom.Options{Backend: b, Logger: quiet, CacheTTL: -1})
	e.must(err)
	reg := prometheus.NewRegistry()
	e.must(reg.Register(c))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(quiet.Handler(), slog.LevelError)})
}

// adminFixture names the jobs seedAdmin stores and what the store must
// say of them.
type adminFixture struct {
	// succeeded (mail, send_email, tenant=acme) failed on worker-a with
	// "disk full on <tmp>", then succeeded on worker-b.
	succeeded string
	// failed (mail, send_email) failed for good: the first two with
	// "smtp: connection refused" (tenant=acme), the third with "smtp:
	// timeout" (tenant=globex).
	failed [3]string
	// running (reports, build_report) is held by worker-c.
	running string
	// queued (mail): send_email with tenant=acme and trace=abc,
	// send_email with tenant=globex, send_digest without headers.
	queued [3]string
	// created and finished are the clock's time at each job's enqueue
	// and, for finished jobs, at its end; state is each job's state.
	created, finished map[string]time.Time
	state             map[string]core.JobState
	// runs holds the succeeded job's two runs as the timeline shows them.
	runs [2]struct{ start, end time.Time }
}

const (
	errRefused = "smtp: connection refused"
	errTimeout = "smtp: timeout"
	errDisk    = "disk full on <tmp>"
)

// seedAdmin stores the fixture's jobs through the backend, a millisecond
// or more apart, all within the minute that starts at epoch.
func seedAdmin(e *env) adminFixture {
	e.Helper()
	fx := adminFixture{created: map[string]time.Time{}, finished: map[string]time.Time{}, state: map[string]core.JobState{}}
	enq := func(r core.EnqueueRequest) string {
		e.Helper()
		e.clock.Advance(time.Millisecond)
		res, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{r})
		e.must(err)
		id := res[0].Job.ID
		fx.created[id], fx.state[id] = e.clock.Now(), core.StateQueued
		e.clock.Advance(time.Millisecond)
		return id
	}
	finish := func(id string, st core.JobState) {
		fx.finished[id], fx.state[id] = e.clock.Now(), st
	}
	acme, globex := map[string]string{"tenant": "acme"}, map[string]string{"tenant": "globex"}

	s := enq(core.EnqueueRequest{Queue: "mail", Task: "send_email", Headers: acme, MaxAttempts: 3})
	fx.succeeded = s
	fx.runs[0].start = e.clock.Now()
	j := claimOne(e, "mail", "worker-a", s)
	e.clock.Advance(1500 * time.Millisecond)
	fx.runs[0].end = e.clock.Now()
	if st, err := e.b.Fail(e.ctx, core.Failure{Lease: j.Lease, Error: errDisk, RetryAt: e.clock.Now()}); err != nil || st != core.StateQueued {
		e.Fatalf("retryable failure: %s, %v", st, err)
	}
	e.clock.Advance(time.Second)
	fx.runs[1].start = e.clock.Now()
	j = claimOne(e, "mail", "worker-b", s)
	e.clock.Advance(250 * time.Millisecond)
	fx.runs[1].end = e.clock.Now()
	completeOne(e, j)
	finish(s, core.StateSucceeded)

	for i, msg := range []string{errRefused, errRefused, errTimeout} {
		hd := acme
		if msg == errTimeout {
			hd = globex
		}
		id := enq(core.EnqueueRequest{Queue: "mail", Task: "send_email", Headers: hd, MaxAttempts: 1})
		j := claimOne(e, "mail", "worker-a", id)
		e.clock.Advance(100 * time.Millisecond)
		if _, err := e.b.Fail(e.ctx, core.Failure{Lease: j.Lease, Error: msg, Terminal: true}); err != nil {
			e.Fatal(err)
		}
		finish(id, core.StateFailed)
		fx.failed[i] = id
	}
	fx.running = enq(core.EnqueueRequest{Queue: "reports", Task: "build_report"})
	claimOne(e, "reports", "worker-c", fx.running)
	fx.state[fx.running] = core.StateRunning
	fx.queued[0] = enq(core.EnqueueRequest{Queue: "mail", Task: "send_email", Headers: map[string]string{"tenant": "acme", "trace": "abc"}})
	fx.queued[1] = enq(core.EnqueueRequest{Queue: "mail", Task: "send_email", Headers: globex})
	fx.queued[2] = enq(core.EnqueueRequest{Queue: "mail", Task: "send_digest"})
	return fx
}

// claimOne claims one job of queue for worker and checks that it is want.
func claimOne(e *env, queue, worker, want string) core.Job {
	e.Helper()
	js, err := e.b.Claim(e.ctx, core.ClaimRequest{Queue: queue, WorkerID: worker, Limit: 1, LeaseTTL: time.Hour})
	if err != nil || len(js) != 1 || js[0].ID != want {
		e.Fatalf("claim of %s by %s: %d jobs, %v; want %s", queue, worker, len(js), err, want)
	}
	return js[0]
}

func completeOne(e *env, j core.Job) {
	e.Helper()
	if errs, err := e.b.Complete(e.ctx, []core.Completion{{Lease: j.Lease}}); err != nil || errs[0] != nil {
		e.Fatalf("complete %s: %v %v", j.ID, err, errs)
	}
}

// all returns every id of the fixture.
func (fx adminFixture) all() []string { return slices.Collect(maps.Keys(fx.created)) }

// counts tallies the fixture's states of ids.
func (fx adminFixture) counts(ids []string) map[core.JobState]int64 {
	out := map[core.JobState]int64{}
	for _, id := range ids {
		out[fx.state[id]]++
	}
	return out
}

// do sends a request with token (none when empty) and a JSON body (none
// when nil), checks its status, and decodes a JSON answer into out when
// out is not nil. It returns the body.
func (a *adminEnv) do(status int, method, path, token string, body, out any) []byte {
	a.Helper()
	return doHTTP(a.env, a.srv, status, method, path, token, body, out)
}

// doHTTP is adminEnv.do against any test server of the env.
func doHTTP(e *env, srv *httptest.Server, status int, method, path, token string, body, out any) []byte {
	e.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		e.must(err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(e.ctx, method, srv.URL+path, rd)
	e.must(err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := srv.Client().Do(req)
	e.must(err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	e.must(err)
	if resp.StatusCode != status {
		e.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, status, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			e.Fatalf("%s %s: decode %q: %v", method, path, data, err)
		}
	}
	return data
}

// get reads path with the read token, wanting 200.
func (a *adminEnv) get(path string, out any) []byte {
	a.Helper()
	return a.do(http.StatusOK, "GET", path, adminReadToken, nil, out)
}

// The API's answers, as far as the test reads them.
type (
	apiJob struct {
		ID         string            `json:"id"`
		Queue      string            `json:"queue"`
		Task       string            `json:"task"`
		State      core.JobState     `json:"state"`
		Headers    map[string]string `json:"headers"`
		Attempt    int               `json:"attempt"`
		CreatedAt  time.Time         `json:"created_at"`
		FinishedAt *time.Time        `json:"finished_at"`
		LastError  string            `json:"last_error"`
	}
	apiJobPage struct {
		Jobs []apiJob `json:"jobs"`
		Next string   `json:"next"`
	}
	apiCounts struct {
		Total  int64                   `json:"total"`
		Counts map[core.JobState]int64 `json:"counts"`
	}
	apiBulk struct {
		DryRun  bool                    `json:"dry_run"`
		Matched int64                   `json:"matched"`
		Counts  map[core.JobState]int64 `json:"counts"`
		Changed int                     `json:"changed"`
		Skipped int                     `json:"skipped"`
		Failed  int                     `json:"failed"`
		Done    bool                    `json:"done"`
	}
	apiQueue struct {
		Queue  string                  `json:"queue"`
		Jobs   map[core.JobState]int64 `json:"jobs"`
		Paused bool                    `json:"paused"`
	}
	apiTask struct {
		Task    string                   `json:"task"`
		Jobs    map[core.JobState]int64  `json:"jobs"`
		Runs    map[core.RunStatus]int64 `json:"runs"`
		RunTime string                   `json:"run_time"`
	}
	apiActivity struct {
		From    time.Time `json:"from"`
		To      time.Time `json:"to"`
		Minutes []struct {
			Start                      time.Time `json:"start"`
			Completed, Failed, Retried int64
		} `json:"minutes"`
		Depth []struct {
			At   time.Time `json:"at"`
			Jobs int64     `json:"jobs"`
		} `json:"depth"`
	}
)

// listJobs pages through GET /api/v1/jobs?query two jobs at a time and
// returns the jobs in the order listed.
func (a *adminEnv) listJobs(query string) []apiJob {
	a.Helper()
	var out []apiJob
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			a.Fatalf("jobs?%s: more than 10 pages", query)
		}
		q := query + "&limit=2"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		var p apiJobPage
		a.get("/api/v1/jobs?"+q, &p)
		out = append(out, p.Jobs...)
		if p.Next == "" {
			return out
		}
		cursor = p.Next
	}
}

func jobIDs(js []apiJob) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}

// uniquePrefix returns the shortest prefix of id that no other id of ids
// starts with.
func uniquePrefix(id string, ids []string) string {
	for n := 1; n < len(id); n++ {
		p, shared := id[:n], false
		for _, o := range ids {
			shared = shared || o != id && strings.HasPrefix(o, p)
		}
		if !shared {
			return p
		}
	}
	return id
}

func rfc(t time.Time) string { return url.QueryEscape(t.UTC().Format(time.RFC3339Nano)) }

// adminAPI checks the JSON API: the search filters and their counts, the
// task list, one job's cancel, retry and delete, a bulk retry by filter,
// and the queue stats.
func adminAPI(a *adminEnv) {
	fx := a.fx
	f1, f2, f3 := fx.failed[0], fx.failed[1], fx.failed[2]
	q1, q2, q3 := fx.queued[0], fx.queued[1], fx.queued[2]
	s, r := fx.succeeded, fx.running
	mail := []string{s, f1, f2, f3, q1, q2, q3}

	// Every job of mail, in id order, with the store's times, states and
	// errors.
	got := a.listJobs("queue=mail")
	if ids := jobIDs(got); !slices.Equal(ids, slices.Sorted(slices.Values(mail))) {
		a.Fatalf("jobs of mail: %v, want %v", ids, slices.Sorted(slices.Values(mail)))
	}
	for _, j := range got {
		fin, done := fx.finished[j.ID]
		if j.State != fx.state[j.ID] || !j.CreatedAt.Equal(fx.created[j.ID]) || (j.FinishedAt != nil) != done ||
			done && !j.FinishedAt.Equal(fin) || j.Queue != "mail" {
			a.Errorf("job %s: %+v; want state %s, created %s, finished %s", j.ID, j, fx.state[j.ID], fx.created[j.ID], fin)
		}
	}
	for id, msg := range map[string]string{f1: errRefused, f2: errRefused, f3: errTimeout} {
		var j apiJob
		if a.get("/api/v1/jobs/"+id, &j); j.LastError != msg || j.State != core.StateFailed || j.Attempt != 1 {
			a.Errorf("failed job %s: %+v, want error %q", id, j, msg)
		}
	}

	// The search filters, each listed and counted.
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"queue=reports", []string{r}},
		{"task=send_email", []string{s, f1, f2, f3, q1, q2}},
		{"queue=mail&task=send_digest", []string{q3}},
		{"state=failed", []string{f1, f2, f3}},
		{"state=queued,running", []string{r, q1, q2, q3}},
		{"header_key=tenant", []string{s, f1, f2, f3, q1, q2}},
		{"header_key=tenant&header_value=acme", []string{s, f1, f2, q1}},
		{"header_key=trace&header_value=abc", []string{q1}},
		{"header_key=tenant&header_value=globex&state=failed", []string{f3}},
		{"id_prefix=" + uniquePrefix(f2, fx.all()), []string{f2}},
		{"ids=" + f1 + "," + r + "&ids=" + q3, []string{f1, r, q3}},
		{"created_from=" + rfc(fx.created[f1]) + "&created_to=" + rfc(fx.created[r]), []string{f1, f2, f3}},
		{"created_from=" + rfc(fx.created[r]), []string{r, q1, q2, q3}},
		{"finished_from=" + rfc(fx.finished[f1]) + "&finished_to=" + rfc(fx.finished[f3]), []string{f1, f2}},
		{"finished_from=" + rfc(epoch), []string{s, f1, f2, f3}},
		{"queue=mail&state=queued&header_key=tenant", []string{q1, q2}},
	} {
		want := slices.Sorted(slices.Values(c.want))
		if ids := jobIDs(a.listJobs(c.query)); !slices.Equal(ids, want) {
			a.Errorf("jobs?%s: %v, want %v", c.query, ids, want)
		}
		var n apiCounts
		a.get("/api/v1/counts/jobs?"+c.query, &n)
		if wc := fx.counts(want); n.Total != int64(len(want)) || !maps.Equal(nonZeroCounts(n.Counts), wc) {
			a.Errorf("counts/jobs?%s: %+v, want %d: %v", c.query, n, len(want), wc)
		}
	}

	// The task list: every task with its jobs, runs and run time.
	var tl struct{ Tasks []apiTask }
	a.get("/api/v1/tasks", &tl)
	wantTasks := []apiTask{
		{Task: "build_report", Jobs: map[core.JobState]int64{core.StateRunning: 1}, Runs: map[core.RunStatus]int64{core.RunRunning: 1}, RunTime: "0s"},
		{Task: "send_digest", Jobs: map[core.JobState]int64{core.StateQueued: 1}, Runs: map[core.RunStatus]int64{}, RunTime: "0s"},
		{Task: "send_email", Jobs: map[core.JobState]int64{core.StateSucceeded: 1, core.StateFailed: 3, core.StateQueued: 2},
			Runs: map[core.RunStatus]int64{core.RunFailed: 4, core.RunSucceeded: 1}, RunTime: "2.05s"},
	}
	if len(tl.Tasks) != len(wantTasks) {
		a.Fatalf("tasks: %+v, want %+v", tl.Tasks, wantTasks)
	}
	for i, w := range wantTasks {
		g := tl.Tasks[i]
		if g.Task != w.Task || !maps.Equal(nonZeroCounts(g.Jobs), w.Jobs) || !maps.Equal(nonZeroCounts(g.Runs), w.Runs) || g.RunTime != w.RunTime {
			a.Errorf("task %d: %+v, want %+v", i, g, w)
		}
	}

	// One job each: cancel, retry, delete. A read token may not; a job in
	// the wrong state is refused and left as it is.
	a.do(http.StatusForbidden, "POST", "/api/v1/jobs/"+q2+"/cancel", adminReadToken, nil, nil)
	a.do(http.StatusUnauthorized, "POST", "/api/v1/jobs/"+q2+"/cancel", "", nil, nil)
	a.do(http.StatusConflict, "POST", "/api/v1/jobs/"+s+"/cancel", adminToken, nil, nil)
	a.do(http.StatusConflict, "DELETE", "/api/v1/jobs/"+r, adminToken, nil, nil)
	a.do(http.StatusConflict, "POST", "/api/v1/jobs/"+q1+"/retry", adminToken, nil, nil)
	var j apiJob
	if a.do(http.StatusOK, "POST", "/api/v1/jobs/"+q2+"/cancel", adminToken, map[string]string{"reason": "tenant left"}, &j); j.State != core.StateCancelled {
		a.Errorf("cancel: %+v", j)
	}
	if a.do(http.StatusOK, "POST", "/api/v1/jobs/"+f3+"/retry", adminToken, nil, &j); j.State != core.StateQueued {
		a.Errorf("retry: %+v", j)
	}
	a.do(http.StatusOK, "DELETE", "/api/v1/jobs/"+q3, adminToken, nil, nil)
	a.do(http.StatusNotFound, "GET", "/api/v1/jobs/"+q3, adminReadToken, nil, nil)
	for id, st := range map[string]core.JobState{q2: core.StateCancelled, f3: core.StateQueued, s: core.StateSucceeded, r: core.StateRunning, q1: core.StateQueued} {
		if got := a.job(id); got.State != st {
			a.Errorf("the store has %s %s, want %s", id, got.State, st)
		}
	}
	if got := a.job(q2); got.LastError != "tenant left" {
		a.Errorf("the cancelled job's reason is %q", got.LastError)
	}
	if _, err := a.b.GetJob(a.ctx, q3); !errors.Is(err, core.ErrNotFound) {
		a.Errorf("the deleted job: %v, want ErrNotFound", err)
	}

	// A bulk retry by filter: the dry run counts, a confirm of another
	// count is refused, the confirm changes exactly the matched jobs.
	filter := map[string]any{"queue": "mail", "states": []string{"failed"}, "header_key": "tenant", "header_value": "acme"}
	var pv apiBulk
	a.do(http.StatusOK, "POST", "/api/v1/bulk/retry/preview", adminToken, map[string]any{"filter": filter}, &pv)
	if !pv.DryRun || pv.Matched != 2 || !maps.Equal(nonZeroCounts(pv.Counts), map[core.JobState]int64{core.StateFailed: 2}) {
		a.Fatalf("bulk preview: %+v, want 2 failed", pv)
	}
	a.do(http.StatusConflict, "POST", "/api/v1/bulk/retry", adminToken, map[string]any{"filter": filter, "confirm_count": 1}, nil)
	a.do(http.StatusForbidden, "POST", "/api/v1/bulk/retry", adminReadToken, map[string]any{"filter": filter, "confirm_count": 2}, nil)
	var res apiBulk
	a.do(http.StatusOK, "POST", "/api/v1/bulk/retry", adminToken, map[string]any{"filter": filter, "confirm_count": pv.Matched}, &res)
	if res.DryRun || res.Matched != 2 || res.Changed != 2 || res.Skipped != 0 || res.Failed != 0 || !res.Done {
		a.Fatalf("bulk retry: %+v, want 2 changed", res)
	}
	for _, id := range []string{f1, f2} {
		if got := a.job(id); got.State != core.StateQueued {
			a.Errorf("bulk-retried %s is %s", id, got.State)
		}
	}

	// The final counts and the queue stats, from the API and the store.
	final := map[string]map[core.JobState]int64{
		"mail":    {core.StateSucceeded: 1, core.StateQueued: 4, core.StateCancelled: 1},
		"reports": {core.StateRunning: 1},
	}
	var ql struct{ Queues []apiQueue }
	a.get("/api/v1/queues", &ql)
	if len(ql.Queues) != 2 || ql.Queues[0].Queue != "mail" || ql.Queues[1].Queue != "reports" {
		a.Fatalf("queues: %+v, want mail and reports", ql.Queues)
	}
	for _, q := range ql.Queues {
		var one apiQueue
		a.get("/api/v1/queues/"+q.Queue, &one)
		var n apiCounts
		a.get("/api/v1/counts/jobs?queue="+q.Queue, &n)
		c, err := a.b.CountJobs(a.ctx, core.JobFilter{Queue: q.Queue})
		a.must(err)
		w := final[q.Queue]
		for what, got := range map[string]map[core.JobState]int64{"queues": q.Jobs, "queues/" + q.Queue: one.Jobs, "counts": n.Counts, "store": c} {
			if !maps.Equal(nonZeroCounts(got), w) {
				a.Errorf("%s of %s: %v, want %v", what, q.Queue, got, w)
			}
		}
		if q.Paused || one.Paused {
			a.Errorf("queue %s is paused", q.Queue)
		}
	}
}

// page gets a dashboard page with the read token and returns its HTML.
func (a *adminEnv) page(path string) string {
	a.Helper()
	return string(a.do(http.StatusOK, "GET", path, adminReadToken, nil, nil))
}

var (
	countCellRE  = regexp.MustCompile(`data-count="([a-z_]+)/([a-z]+)">(\d+)<`)
	timelineRE   = regexp.MustCompile(`(?s)<ol class="timeline" id="timeline">(.*?)</ol>`)
	timelineLiRE = regexp.MustCompile(`(?s)<li class="([a-z]+)" data-run="[^"]+">(.*?)</li>`)
	runWorkerRE  = regexp.MustCompile(`attempt \d+ on <code>([^<]*)</code>`)
	runWhenRE    = regexp.MustCompile(`<div class="when">([^<]*)</div>`)
	runErrRE     = regexp.MustCompile(`<div class="err">([^<]*)</div>`)
	failedRowRE  = regexp.MustCompile(`(?s)<tr data-group="\d+">\s*<td class="num count">(\d+)</td>\s*<td class="err">([^<]*)</td>\s*<td>(.*?)</td>\s*<td>(.*?)</td>`)
	tagRE        = regexp.MustCompile(`<[^>]*>`)
)

// pageCounts returns the job counts a page shows, by queue and state.
func pageCounts(html string) map[string]map[core.JobState]int64 {
	out := map[string]map[core.JobState]int64{}
	for _, m := range countCellRE.FindAllStringSubmatch(html, -1) {
		if out[m[1]] == nil {
			out[m[1]] = map[core.JobState]int64{}
		}
		var n int64
		_, _ = fmt.Sscan(m[3], &n)
		out[m[1]][core.JobState(m[2])] = n
	}
	return out
}

// shownTime is a time as the dashboard shows it.
func shownTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000Z") }

// adminDashboard checks the dashboard's pages over the store: queue
// counts, a job's timeline, the failed jobs by error, and the activity
// chart, the same from a second handler on the same store.
func adminDashboard(a *adminEnv) {
	fx := a.fx
	// A minute later, the first queued job of mail succeeds.
	a.clock.Set(epoch.Add(70 * time.Second))
	j := claimOne(a.env, "mail", "worker-c", fx.queued[0])
	a.clock.Advance(200 * time.Millisecond)
	completeOne(a.env, j)
	a.clock.Set(epoch.Add(90 * time.Second))

	want := map[string]map[core.JobState]int64{
		"mail":    {core.StateQueued: 2, core.StateRunning: 0, core.StateSleeping: 0, core.StateSucceeded: 2, core.StateFailed: 3, core.StateCancelled: 0},
		"reports": {core.StateQueued: 0, core.StateRunning: 1, core.StateSleeping: 0, core.StateSucceeded: 0, core.StateFailed: 0, core.StateCancelled: 0},
	}
	if got := pageCounts(a.page("/")); !maps.EqualFunc(got, want, maps.Equal) {
		a.Errorf("the queue list shows %v, want %v", got, want)
	}
	for q, w := range want {
		html := a.page("/queues/" + q)
		if got := pageCounts(html)[q]; !maps.Equal(got, w) {
			a.Errorf("the page of %s shows %v, want %v", q, got, w)
		}
		if !strings.Contains(html, `<span class="badge active">active</span>`) || !strings.Contains(html, `id="activity-chart"`) {
			a.Errorf("the page of %s lacks its badge or chart:\n%s", q, html)
		}
	}

	// The succeeded job's timeline: a failed run on worker-a with its
	// error, then a succeeded one on worker-b; the running job's one run.
	runs, err := a.b.ListRuns(a.ctx, fx.succeeded)
	a.must(err)
	if len(runs) != 2 {
		a.Fatalf("the store has %d runs of the succeeded job", len(runs))
	}
	type item struct{ class, worker, when, err string }
	wantTL := []item{
		{"failed", "worker-a", fmt.Sprintf("%s → %s (1.5s) · token %d", shownTime(fx.runs[0].start), shownTime(fx.runs[0].end), runs[0].Token), "disk full on &lt;tmp&gt;"},
		{"succeeded", "worker-b", fmt.Sprintf("%s → %s (250ms) · token %d", shownTime(fx.runs[1].start), shownTime(fx.runs[1].end), runs[1].Token), ""},
	}
	timeline := func(id string) []item {
		m := timelineRE.FindStringSubmatch(a.page("/jobs/" + id))
		if m == nil {
			a.Fatalf("the page of job %s has no timeline", id)
		}
		var out []item
		for _, li := range timelineLiRE.FindAllStringSubmatch(m[1], -1) {
			it := item{class: li[1]}
			for _, f := range []struct {
				re *regexp.Regexp
				to *string
			}{{runWorkerRE, &it.worker}, {runWhenRE, &it.when}, {runErrRE, &it.err}} {
				if w := f.re.FindStringSubmatch(li[2]); w != nil {
					*f.to = w[1]
				}
			}
			out = append(out, it)
		}
		return out
	}
	if got := timeline(fx.succeeded); !slices.Equal(got, wantTL) {
		a.Errorf("the timeline of the succeeded job:\n%+v\nwant\n%+v", got, wantTL)
	}
	if got := timeline(fx.running); len(got) != 1 || got[0].class != "running" || got[0].worker != "worker-c" ||
		!strings.HasSuffix(got[0].when, "still running · token "+fmt.Sprint(a.job(fx.running).Lease.Token)) || got[0].err != "" {
		a.Errorf("the timeline of the running job: %+v", got)
	}

	// The failed jobs, grouped by error, largest group first.
	type group struct{ count, err, queues, tasks string }
	failed := func(query string) []group {
		var out []group
		for _, m := range failedRowRE.FindAllStringSubmatch(a.page("/failed"+query), -1) {
			out = append(out, group{m[1], m[2], strings.TrimSpace(tagRE.ReplaceAllString(m[3], "")), strings.TrimSpace(m[4])})
		}
		return out
	}
	wantGroups := []group{{"2", errRefused, "mail", "send_email"}, {"1", errTimeout, "mail", "send_email"}}
	if got := failed(""); !slices.Equal(got, wantGroups) {
		a.Errorf("failed jobs by error: %+v, want %+v", got, wantGroups)
	}
	if got := failed("?queue=reports"); len(got) != 0 {
		a.Errorf("failed jobs of reports: %+v, want none", got)
	}

	// The activity of mail: at 12:00 one success, three failures and the
	// failed first run of the success; at 12:01 one success. Its depth is
	// zero until the jobs came, then its two open jobs.
	var act apiActivity
	chartJSON := a.get("/api/v1/queues/mail/activity", &act)
	to := epoch.Add(2 * time.Minute)
	if !act.To.Equal(to) || !act.From.Equal(to.Add(-time.Hour)) || len(act.Minutes) != 60 {
		a.Fatalf("the chart's window: %s to %s, %d minutes", act.From, act.To, len(act.Minutes))
	}
	for i, m := range act.Minutes {
		w := [3]int64{}
		switch i {
		case 58:
			w = [3]int64{1, 3, 1}
		case 59:
			w = [3]int64{1, 0, 0}
		}
		if got := [3]int64{m.Completed, m.Failed, m.Retried}; got != w || !m.Start.Equal(act.From.Add(time.Duration(i)*time.Minute)) {
			a.Errorf("minute %d (%s): completed, failed, retried %v; want %v", i, m.Start, got, w)
		}
	}
	if n := len(act.Depth); n != 13 || !act.Depth[n-1].At.Equal(a.clock.Now()) || act.Depth[n-1].Jobs != 2 {
		a.Errorf("depth: %+v, want 13 samples ending with 2 jobs now", act.Depth)
	}
	for _, d := range act.Depth[:len(act.Depth)-1] {
		if d.Jobs != 0 {
			a.Errorf("depth at %s: %d, want 0", d.At, d.Jobs)
		}
	}
	// A second replica of the admin server draws the same chart.
	srv2 := httptest.NewServer(newAdminHandler(a.env, a.replica()))
	a.Cleanup(srv2.Close)
	for _, p := range []struct {
		path  string
		first []byte
	}{{"/api/v1/queues/mail/activity", chartJSON}, {"/queues/mail/activity.svg", a.do(http.StatusOK, "GET", "/queues/mail/activity.svg", adminReadToken, nil, nil)}} {
		if second := doHTTP(a.env, srv2, http.StatusOK, "GET", p.path, adminReadToken, nil, nil); !bytes.Equal(p.first, second) {
			a.Errorf("%s differs on a second replica:\n%s\n---\n%s", p.path, p.first, second)
		}
	}
}

// scrape gets /metrics with token and parses it with the Prometheus text
// parser; it returns the boson_queue_ samples, each keyed by its name and
// sorted labels as in `name{k="v",…}`.
func (a *adminEnv) scrape(token string) map[string]float64 {
	a.Helper()
	body := a.do(http.StatusOK, "GET", "/metrics", token, nil, nil)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		a.Fatalf("the Prometheus parser refuses the page: %v\n%s", err, body)
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "boson_queue_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(ls)
			out[name+"{"+strings.Join(ls, ",")+"}"] = m.GetGauge().GetValue()
		}
	}
	return out
}

// queueGauges is what /metrics must say of qs, in scrape's terms: each
// queue's job counts by state (zero included) and its paused flag.
func queueGauges(qs []core.QueueInfo) map[string]float64 {
	out := map[string]float64{"boson_queue_stats_up{}": 1}
	for _, q := range qs {
		for _, st := range core.AllStates {
			out[fmt.Sprintf(`boson_queue_jobs{queue=%q,state=%q}`, q.Queue, st)] = float64(q.Jobs[st])
		}
		out[fmt.Sprintf(`boson_queue_paused{queue=%q}`, q.Queue)] = float64(boolInt(q.Paused))
	}
	return out
}

// adminMetrics scrapes /metrics: it needs a token, and its queue gauges
// equal the store's stats and the fixture's, before and after a pause.
func adminMetrics(a *adminEnv) {
	a.do(http.StatusUnauthorized, "GET", "/metrics", "", nil, nil)
	a.do(http.StatusUnauthorized, "GET", "/metrics", "wrong-token-0123456789", nil, nil)
	queues := []core.QueueInfo{
		{Queue: "mail", Jobs: map[core.JobState]int64{core.StateQueued: 3, core.StateSucceeded: 1, core.StateFailed: 3}},
		{Queue: "reports", Jobs: map[core.JobState]int64{core.StateRunning: 1}},
	}
	want := queueGauges(queues)
	check := func(when string) {
		a.Helper()
		qs, err := a.b.ListQueues(a.ctx)
		a.must(err)
		got, store := a.scrape(adminReadToken), queueGauges(qs)
		if !maps.Equal(store, want) {
			a.Errorf("%s: the store's stats are %v, want %v", when, store, want)
		}
		if !maps.Equal(got, want) {
			a.Errorf("%s: /metrics has %v, want %v", when, got, want)
		}
	}
	check("before the pause")
	a.do(http.StatusForbidden, "POST", "/api/v1/queues/mail/pause", adminReadToken, nil, nil)
	a.do(http.StatusOK, "POST", "/api/v1/queues/mail/pause", adminToken, nil, nil)
	queues[0].Paused = true
	want = queueGauges(queues)
	check("after pausing mail")
	if got := a.scrape(adminToken); !maps.Equal(got, want) {
		a.Errorf("with the admin token: %v", got)
	}
}
