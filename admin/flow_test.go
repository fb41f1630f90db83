package admin

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

// flowFixture is what seedFlow stored: a limited task's jobs, some of
// them claimed under its limits, and a sequence.
type flowFixture struct {
	acme, beta, unkeyed []string
	// sequence holds the jobs of sequence order-1 in queue seq, in
	// enqueue order; other is a job of sequence order-2.
	sequence []string
	other    string
}

// seedFlow limits task tenant_task to 10 running jobs and 2 per limit key,
// enqueues three jobs for key acme, one for beta and one without a key in
// queue work, and claims as many as the store hands out (2 acme, the beta
// and the unkeyed job); then it enqueues three jobs of sequence order-1
// and one of order-2 in queue seq.
func seedFlow(t *testing.T, e *env) flowFixture {
	t.Helper()
	ctx := context.Background()
	if _, ok := e.h.st.all()[0].(core.FlowController); !ok {
		t.Fatal("the test backend does not offer core.FlowController")
	}
	e.expect("PUT", "/api/v1/tasks/tenant_task/config", "", map[string]any{"max_running": 10, "max_running_per_key": 2, "max_starts_per_second": 100, "hold_sequence_on_failure": true}, 200, "")
	var f flowFixture
	enq := func(r core.EnqueueRequest) string {
		res, err := e.be.Enqueue(ctx, []core.EnqueueRequest{r})
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Millisecond)
		return res[0].Job.ID
	}
	for i := 0; i < 3; i++ {
		f.acme = append(f.acme, enq(core.EnqueueRequest{Queue: "work", Task: "tenant_task", LimitKey: "acme"}))
	}
	f.beta = append(f.beta, enq(core.EnqueueRequest{Queue: "work", Task: "tenant_task", LimitKey: "beta"}))
	f.unkeyed = append(f.unkeyed, enq(core.EnqueueRequest{Queue: "work", Task: "tenant_task"}))
	js, err := e.be.Claim(ctx, core.ClaimRequest{Queue: "work", WorkerID: "w-flow", Limit: 10, LeaseTTL: time.Hour})
	if err != nil || len(js) != 4 {
		t.Fatalf("claim under the limits: %d jobs, %v", len(js), err)
	}
	for i := 0; i < 3; i++ {
		f.sequence = append(f.sequence, enq(core.EnqueueRequest{Queue: "seq", Task: "ship", SequenceKey: "order-1"}))
		if i == 0 {
			f.other = enq(core.EnqueueRequest{Queue: "seq", Task: "ship", SequenceKey: "order-2"})
		}
	}
	return f
}

// TestFlowReadsSearchAndConfigs reads running jobs against the limits and
// the busiest keys after real claims under them, searches by limit and
// sequence key, and round-trips the flow fields of configs and jobs.
func TestFlowReadsSearchAndConfigs(t *testing.T) {
	e := newEnv(t, NoAuth())
	f := seedFlow(t, e)
	ctx := context.Background()

	var cfg taskConfigView
	e.do("GET", "/api/v1/tasks/tenant_task/config", "", nil, &cfg)
	if cfg.MaxRunning != 10 || cfg.MaxRunningPerKey != 2 || cfg.MaxStartsPerSecond != 100 || cfg.MaxStartsPerSecondPerKey != 0 || !cfg.HoldSequenceOnFailure {
		t.Fatalf("task config: %+v", cfg)
	}
	stored, err := e.be.GetTaskConfig(ctx, "tenant_task")
	if err != nil || stored.MaxRunningPerKey != 2 || !stored.HoldSequenceOnFailure {
		t.Fatalf("stored task config: %+v %v", stored, err)
	}

	var tf taskFlowView
	e.do("GET", "/api/v1/tasks/tenant_task/flow", "", nil, &tf)
	want := taskFlowView{Task: "tenant_task", Running: 4, MaxRunning: 10, MaxRunningPerKey: 2, MaxStartsPerSecond: 100, HoldSequenceOnFailure: true,
		Keys: []keyView{{Key: "acme", Running: 2, AtLimit: true}, {Key: "beta", Running: 1}}}
	if !sameTaskFlow(tf, want) {
		t.Fatalf("task flow:\n got %+v\nwant %+v", tf, want)
	}
	e.do("GET", "/api/v1/tasks/tenant_task/flow?limit=1", "", nil, &tf)
	if len(tf.Keys) != 1 || tf.Keys[0].Key != "acme" {
		t.Fatalf("task flow, one key: %+v", tf.Keys)
	}
	e.do("GET", "/api/v1/tasks/unlimited/flow", "", nil, &tf)
	if !sameTaskFlow(tf, taskFlowView{Task: "unlimited", Keys: []keyView{}}) {
		t.Fatalf("a task without config: %+v", tf)
	}

	var qf queueFlowView
	e.do("GET", "/api/v1/queues/work/flow", "", nil, &qf)
	if qf != (queueFlowView{Queue: "work", Running: 4}) {
		t.Fatalf("queue flow before a limit: %+v", qf)
	}
	var qc queueSettingsView
	e.do("PUT", "/api/v1/queues/work/config", "", map[string]any{"max_running": 4}, &qc)
	if qc.MaxRunning != 4 {
		t.Fatalf("queue config answer: %+v", qc)
	}
	if c, err := e.be.GetQueueConfig(ctx, "work"); err != nil || c.MaxRunning != 4 {
		t.Fatalf("stored queue config: %+v %v", c, err)
	}
	e.do("GET", "/api/v1/queues/work/flow", "", nil, &qf)
	if qf != (queueFlowView{Queue: "work", Running: 4, MaxRunning: 4, AtLimit: true}) {
		t.Fatalf("queue flow at its limit: %+v", qf)
	}
	var qv queueView
	e.do("GET", "/api/v1/queues/work", "", nil, &qv)
	if qv.MaxRunning != 4 || qv.Jobs[core.StateRunning] != 4 {
		t.Fatalf("queue: %+v", qv)
	}

	// Search by limit key and by sequence key, exactly.
	var page jobPageView
	e.do("GET", "/api/v1/jobs?limit_key=acme", "", nil, &page)
	if ids := pageIDs(page); strings.Join(ids, ",") != strings.Join(f.acme, ",") {
		t.Fatalf("jobs of acme: %v, want %v", ids, f.acme)
	}
	for _, j := range page.Jobs {
		if j.LimitKey != "acme" || j.SequenceKey != "" {
			t.Fatalf("job of acme: %+v", j)
		}
	}
	var counts countsView[core.JobState]
	e.do("GET", "/api/v1/counts/jobs?limit_key=acme", "", nil, &counts)
	if counts.Total != 3 || counts.Counts[core.StateRunning] != 2 || counts.Counts[core.StateQueued] != 1 {
		t.Fatalf("counts of acme: %+v", counts)
	}
	e.do("GET", "/api/v1/jobs?queue=seq&sequence_key=order-1&order=asc", "", nil, &page)
	if ids := pageIDs(page); strings.Join(ids, ",") != strings.Join(f.sequence, ",") {
		t.Fatalf("sequence order-1: %v, want %v", ids, f.sequence)
	}
	e.do("GET", "/api/v1/jobs?limit_key=nobody", "", nil, &page)
	if len(page.Jobs) != 0 {
		t.Fatalf("jobs of an unused key: %v", pageIDs(page))
	}
	var jv jobView
	e.do("GET", "/api/v1/jobs/"+f.other, "", nil, &jv)
	if jv.SequenceKey != "order-2" || jv.LimitKey != "" || jv.Unique != "" {
		t.Fatalf("job of order-2: %+v", jv)
	}

	// A bulk preview by key counts only that key's jobs.
	var bv bulkView
	e.do("POST", "/api/v1/bulk/cancel/preview", "", map[string]any{"filter": map[string]any{"limit_key": "beta"}}, &bv)
	if bv.Matched != 1 || bv.MatchAll {
		t.Fatalf("bulk preview of beta: %+v", bv)
	}

	// Enqueue with the flow fields; the job carries them as stored.
	var ev enqueueView
	resp, _ := e.do("POST", "/api/v1/jobs", "", map[string]any{"task": "tenant_task", "queue": "work", "limit_key": "gamma", "sequence_key": "s-9",
		"idempotency_key": "k-1", "unique": "by_period", "unique_period": "1h"}, &ev)
	if resp.StatusCode != http.StatusCreated || ev.Job.LimitKey != "gamma" || ev.Job.SequenceKey != "s-9" || ev.Job.Unique != core.UniqueByPeriod || ev.Job.UniquePeriod != "1h0m0s" {
		t.Fatalf("enqueue with flow fields: %d %+v", resp.StatusCode, ev)
	}
	j, err := e.be.GetJob(ctx, ev.Job.ID)
	if err != nil || j.LimitKey != "gamma" || j.SequenceKey != "s-9" || j.Unique != core.UniqueByPeriod || j.UniquePeriod != time.Hour {
		t.Fatalf("stored job: %+v %v", j, err)
	}
}

func pageIDs(p jobPageView) []string {
	out := make([]string, 0, len(p.Jobs))
	for _, j := range p.Jobs {
		out = append(out, j.ID)
	}
	return out
}

func sameTaskFlow(a, b taskFlowView) bool {
	if len(a.Keys) != len(b.Keys) {
		return false
	}
	for i := range a.Keys {
		if a.Keys[i] != b.Keys[i] {
			return false
		}
	}
	a.Keys, b.Keys = nil, nil
	return a.Task == b.Task && a.Running == b.Running && a.AtLimit == b.AtLimit && a.MaxRunning == b.MaxRunning &&
		a.MaxRunningPerKey == b.MaxRunningPerKey && a.MaxStartsPerSecond == b.MaxStartsPerSecond &&
		a.MaxStartsPerSecondPerKey == b.MaxStartsPerSecondPerKey && a.HoldSequenceOnFailure == b.HoldSequenceOnFailure
}

// TestDashboardFlow renders the task, queue, job list and job pages of a
// limited task and a sequence: running against the limits, the busiest
// keys, a sequence's jobs in order, and links that all answer.
func TestDashboardFlow(t *testing.T) {
	e := newEnv(t, NoAuth())
	f := seedFlow(t, e)
	e.expect("PUT", "/api/v1/queues/work/config", "", map[string]any{"max_running": 4}, 200, "")
	srv := mounted(t, e.h)
	c := srv.Client()
	base := srv.URL + "/ops/admin/"

	u := base + "tasks/tenant_task"
	code, html := getPage(t, c, u)
	if code != 200 || !strings.Contains(html, `id="running">4 of 10`) || !strings.Contains(html, `data-key="acme" class="at-limit"`) ||
		!strings.Contains(html, `data-key="beta">`) || !strings.Contains(html, "at most 2 running") || !strings.Contains(html, "holds its sequence") {
		t.Fatalf("task page: %d\n%s", code, html)
	}
	checkLinks(t, c, u, html)

	code, html = getPage(t, c, base+"tasks")
	if code != 200 || !strings.Contains(html, "running 4 of 10") || !strings.Contains(html, "2 per key") {
		t.Fatalf("tasks page: %d\n%s", code, html)
	}
	code, html = getPage(t, c, base+"queues/work")
	if code != 200 || !strings.Contains(html, `id="queue-limit"`) || !strings.Contains(html, `data-count="work/running">4</span> of at most 4`) || !strings.Contains(html, "at limit") {
		t.Fatalf("queue page: %d\n%s", code, html)
	}

	// The job page links a job's sequence; the list it links holds the
	// sequence's jobs oldest first, without asking for the order.
	u = base + "jobs/" + f.sequence[1]
	code, html = getPage(t, c, u)
	if code != 200 || !strings.Contains(html, `id="sequence-key"`) || !strings.Contains(html, "sequence_key=order-1") {
		t.Fatalf("job page: %d\n%s", code, html)
	}
	checkLinks(t, c, u, html)
	code, html = getPage(t, c, base+"jobs?queue=seq&sequence_key=order-1")
	if code != 200 || strings.Contains(html, `data-job="`+f.other+`"`) {
		t.Fatalf("sequence list: %d\n%s", code, html)
	}
	last := -1
	for _, id := range f.sequence {
		i := strings.Index(html, `data-job="`+id+`"`)
		if i < last {
			t.Fatalf("sequence list out of order (or missing %s):\n%s", id, html)
		}
		last = i
	}
	code, html = getPage(t, c, base+"jobs?limit_key=acme&state=running")
	if code != 200 || strings.Count(html, `data-job="`) != 2 || !strings.Contains(html, `value="acme"`) {
		t.Fatalf("running jobs of acme: %d\n%s", code, html)
	}
}

// TestFlowAcrossARouter reads flow over two stores behind a router: a
// task config goes to both, running jobs and the counts of one limit key
// add up, the busiest keys are ordered over the union, and a queue's
// limit is its own store's.
func TestFlowAcrossARouter(t *testing.T) {
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
	e.expect("PUT", "/api/v1/tasks/t/config", "", map[string]any{"max_running_per_key": 3}, 200, "")
	for _, be := range []*mem.Backend{a, b} {
		if c, err := be.GetTaskConfig(ctx, "t"); err != nil || c.MaxRunningPerKey != 3 {
			t.Fatalf("config on each store: %+v %v", c, err)
		}
	}
	for _, s := range []struct {
		be    *mem.Backend
		queue string
		keys  []string
	}{{a, "near", []string{"k1", "k2", "k2"}}, {b, "far", []string{"k2", "k3", "k3", "k1"}}} {
		var reqs []core.EnqueueRequest
		for _, k := range s.keys {
			reqs = append(reqs, core.EnqueueRequest{Queue: s.queue, Task: "t", LimitKey: k})
		}
		if _, err := s.be.Enqueue(ctx, reqs); err != nil {
			t.Fatal(err)
		}
		if js, err := s.be.Claim(ctx, core.ClaimRequest{Queue: s.queue, WorkerID: "w", Limit: 10, LeaseTTL: time.Hour}); err != nil || len(js) != len(s.keys) {
			t.Fatalf("claim on %s: %d %v", s.queue, len(js), err)
		}
	}
	var tf taskFlowView
	e.do("GET", "/api/v1/tasks/t/flow", "", nil, &tf)
	want := taskFlowView{Task: "t", Running: 7, MaxRunningPerKey: 3,
		Keys: []keyView{{Key: "k2", Running: 3, AtLimit: true}, {Key: "k1", Running: 2}, {Key: "k3", Running: 2}}}
	if !sameTaskFlow(tf, want) {
		t.Fatalf("task flow over a router:\n got %+v\nwant %+v", tf, want)
	}
	e.do("GET", "/api/v1/tasks/t/flow?limit=2", "", nil, &tf)
	if len(tf.Keys) != 2 || tf.Keys[1].Key != "k1" {
		t.Fatalf("two busiest keys: %+v", tf.Keys)
	}
	e.expect("PUT", "/api/v1/queues/far/config", "", map[string]any{"max_running": 9}, 200, "")
	if c, _ := a.GetQueueConfig(ctx, "far"); c.MaxRunning != 0 {
		t.Fatalf("the queue's limit went to the wrong store: %+v", c)
	}
	var qf queueFlowView
	e.do("GET", "/api/v1/queues/far/flow", "", nil, &qf)
	if qf != (queueFlowView{Queue: "far", Running: 4, MaxRunning: 9}) {
		t.Fatalf("queue flow over a router: %+v", qf)
	}
	var page jobPageView
	e.do("GET", "/api/v1/jobs?limit_key=k1", "", nil, &page)
	if len(page.Jobs) != 2 {
		t.Fatalf("jobs of k1 over a router: %v", pageIDs(page))
	}
}

// TestDashboardBulkByLimitKey cancels from the job list filtered by limit
// key: the preview counts that key's jobs only, and the confirm cancels
// exactly those.
func TestDashboardBulkByLimitKey(t *testing.T) {
	e := newEnv(t, NoAuth())
	f := seedFlow(t, e)
	srv := mounted(t, e.h)
	c := srv.Client()
	c.Jar, _ = cookiejar.New(nil)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	base := srv.URL + "/ops/admin/"
	csrf := formToken(t, c, base+"jobs?limit_key=acme&state=queued", "")
	filter := "limit_key=acme&state=queued"
	if code, body := postPage(t, c, base+"bulk/cancel", url.Values{"csrf": {csrf}, "filter": {filter}}); code != 200 || !strings.Contains(body, `data-count="1"`) {
		t.Fatalf("preview by limit key: %d\n%s", code, body)
	}
	resp, err := c.PostForm(base+"bulk/cancel", url.Values{"csrf": {csrf}, "filter": {filter}, "confirm_count": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 303 {
		t.Fatalf("confirm by limit key: %d", resp.StatusCode)
	}
	got := e.states("work")
	if got[core.StateCancelled] != 1 || got[core.StateRunning] != 4 {
		t.Fatalf("after the cancel by key: %v", got)
	}
	if j, err := e.be.GetJob(context.Background(), f.acme[2]); err != nil || j.State != core.StateCancelled {
		t.Fatalf("the queued job of acme: %+v %v", j, err)
	}
}
