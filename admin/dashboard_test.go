package admin

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// getPage fetches a dashboard page and returns its status and HTML.
func getPage(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	return readPage(t)(c.Get(u))
}

// postPage posts form to a dashboard page and returns its status and HTML.
func postPage(t *testing.T, c *http.Client, u string, form url.Values) (int, string) {
	t.Helper()
	return readPage(t)(c.PostForm(u, form))
}

// readPage returns a reader of a page's answer: its status and HTML, or
// the request's error as t's failure.
func readPage(t *testing.T) func(*http.Response, error) (int, string) {
	return func(resp *http.Response, err error) (int, string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}

// mounted serves h under /ops/admin the way users are told to.
func mounted(t *testing.T, h http.Handler) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle("/ops/admin/", http.StripPrefix("/ops/admin", h))
	return newTestServer(t, mux)
}

var hrefRE = regexp.MustCompile(`(?:href|action|src)="([^"]*)"`)

// checkLinks resolves every link of a page against its URL and checks that
// it stays under the prefix and that GET targets answer 200.
func checkLinks(t *testing.T, c *http.Client, pageURL, html string) {
	t.Helper()
	base, _ := url.Parse(pageURL)
	for _, m := range hrefRE.FindAllStringSubmatch(html, -1) {
		ref, err := url.Parse(strings.ReplaceAll(m[1], "&amp;", "&"))
		if err != nil {
			t.Errorf("%s: bad link %q", pageURL, m[1])
			continue
		}
		abs := base.ResolveReference(ref)
		if !strings.HasPrefix(abs.Path, "/ops/admin/") {
			t.Errorf("%s: link %q leaves the prefix (%s)", pageURL, m[1], abs.Path)
			continue
		}
		if strings.Contains(m[0], "action=") {
			continue
		}
		if code, _ := getPage(t, c, abs.String()); code != 200 {
			t.Errorf("%s: link %q answers %d", pageURL, m[1], code)
		}
	}
}

func TestDashboardPagesUnderPrefix(t *testing.T) {
	e := newEnv(t, NoAuth(), func(o *Options) { o.Title = "Ops <&>" })
	srv := mounted(t, e.h)
	c := srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(srv.URL + "/ops/admin")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode/100 != 3 || !strings.HasSuffix(loc, "admin/") {
		t.Fatalf("bare prefix: %d %q", resp.StatusCode, loc)
	}
	// Mounted without a mux, the handler itself adds the slash.
	rec := httptest.NewRecorder()
	http.StripPrefix("/ops/admin", e.h).ServeHTTP(rec, httptest.NewRequest("GET", "/ops/admin", nil))
	if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "admin/" {
		t.Fatalf("bare prefix without a mux: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	for _, p := range []string{"/", "/jobs", "/jobs?state=queued&order=desc&limit=2", "/jobs/" + e.ids.succeeded, "/jobs/" + e.ids.hostile, "/jobs/" + e.ids.failed, "/tasks"} {
		u := srv.URL + "/ops/admin" + p
		code, html := getPage(t, c, u)
		if code != 200 {
			t.Fatalf("%s: %d\n%s", p, code, html)
		}
		if !strings.Contains(html, "Ops &lt;&amp;&gt;") {
			t.Errorf("%s: the title is not escaped", p)
		}
		checkLinks(t, c, u, html)
	}
	_, html := getPage(t, c, srv.URL+"/ops/admin/jobs/"+e.ids.succeeded)
	for _, want := range []string{`id="result"`, "&#34;sent&#34;: true", "render", "send_email", "succeeded", "No checkpoints"} {
		if want == "No checkpoints" {
			if strings.Contains(html, want) {
				t.Errorf("job page shows %q although a checkpoint exists", want)
			}
			continue
		}
		if !strings.Contains(html, want) {
			t.Errorf("job page lacks %q", want)
		}
	}
	_, html = getPage(t, c, srv.URL+"/ops/admin/jobs/"+e.ids.failed)
	if !strings.Contains(html, "smtp: connection refused") || !strings.Contains(html, `id="retry"`) || strings.Contains(html, `id="cancel"`) {
		t.Errorf("failed job page: error or buttons wrong")
	}
	code, html := getPage(t, c, srv.URL+"/ops/admin/jobs/"+core.NewID(e.clock.Now()))
	if code != 404 || !strings.Contains(html, "not found") {
		t.Errorf("missing job page: %d", code)
	}
	code, _ = getPage(t, c, srv.URL+"/ops/admin/jobs?limit=99999")
	if code != 400 {
		t.Errorf("bad filter page: %d", code)
	}
	code, _ = getPage(t, c, srv.URL+"/ops/admin/nowhere")
	if code != 404 {
		t.Errorf("unknown page: %d", code)
	}
}

var ownChart = regexp.MustCompile(`<img src="(\.\./)+queues/[a-z]+/activity\.svg" alt="[^"<>]*" id="activity-chart" width="640" height="272">`)

var ownScript = regexp.MustCompile(`<script src="(\./|(\.\./)+)static/live\.js" defer></script>`)

func TestDashboardEscapesHostileData(t *testing.T) {
	e := newEnv(t, NoAuth())
	ctx := context.Background()
	evil := `<script>alert("x")</script>`
	res, err := e.be.Enqueue(ctx, []core.EnqueueRequest{{Task: "evil", Headers: map[string]string{evil: evil}, IdempotencyKey: evil, Payload: []byte(evil)}})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := e.be.Claim(ctx, core.ClaimRequest{Queue: core.DefaultQueue, WorkerID: "w", Limit: 1, LeaseTTL: 1e9})
	if _, err := e.be.Fail(ctx, core.Failure{Lease: js[0].Lease, Error: evil, Terminal: true}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/jobs/" + res[0].Job.ID, "/jobs/" + e.ids.hostile, "/jobs", "/tasks", "/", "/failed", "/runs", "/queues/default", "/enqueue?task=" + url.QueryEscape(evil)} {
		_, html := getPage(t, e.srv.Client(), e.srv.URL+p)
		// The page's own script is the layout's one static file.
		html = ownChart.ReplaceAllString(ownScript.ReplaceAllString(html, ""), "")
		if strings.Contains(html, "<script") || strings.Contains(html, "<img") {
			t.Errorf("%s: hostile markup reached the page", p)
		}
	}
	_, html := getPage(t, e.srv.Client(), e.srv.URL+"/jobs/"+res[0].Job.ID)
	if !strings.Contains(html, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") {
		t.Errorf("escaped text is missing from the page")
	}
}

func TestDashboardButtonsFollowPermission(t *testing.T) {
	e := newEnv(t, Tokens([]string{readToken}, []string{adminToken}))
	get := func(token, path string) (int, string) {
		req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, html := get("", "/")
	if code != 401 || !strings.Contains(html, `name="token"`) {
		t.Fatalf("no token: %d, want the login form", code)
	}
	_, html = get(readToken, "/jobs/"+e.ids.queued)
	if strings.Contains(html, `id="cancel"`) || strings.Contains(html, "<form method=\"post\"") {
		t.Errorf("read-only caller sees a mutating form")
	}
	_, html = get(readToken, "/")
	if strings.Contains(html, "Pause") {
		t.Errorf("read-only caller sees pause")
	}
	_, html = get(adminToken, "/jobs/"+e.ids.queued)
	if !strings.Contains(html, `id="cancel"`) {
		t.Errorf("admin does not see cancel")
	}
	_, html = get(adminToken, "/")
	if !strings.Contains(html, "Pause") {
		t.Errorf("admin does not see pause")
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// formToken loads a dashboard page with c (whose jar keeps the CSRF
// cookie) and returns the CSRF token of its forms.
func formToken(t *testing.T, c *http.Client, u, token string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := csrfRE.FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("%s: no CSRF token in the page (%d)", u, resp.StatusCode)
	}
	return m[1]
}

func postForm(t *testing.T, c *http.Client, u string, form url.Values, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func TestDashboardFormsNeedCSRFAndAdmin(t *testing.T) {
	e := newEnv(t, Tokens([]string{readToken}, []string{adminToken}))
	srv := mounted(t, e.h)
	c := srv.Client()
	c.Jar, _ = cookiejar.New(nil)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	cancel := srv.URL + "/ops/admin/jobs/" + e.ids.queued + "/cancel"
	csrf := formToken(t, c, srv.URL+"/ops/admin/", adminToken)
	if r := postForm(t, c, cancel, url.Values{}, adminToken); r.StatusCode != 403 {
		t.Fatalf("no csrf token: %d", r.StatusCode)
	}
	if r := postForm(t, c, cancel, url.Values{"csrf": {"wrong"}}, adminToken); r.StatusCode != 403 {
		t.Fatalf("wrong csrf token: %d", r.StatusCode)
	}
	if r := postForm(t, c, cancel, url.Values{"csrf": {csrf}}, readToken); r.StatusCode != 403 {
		t.Fatalf("read token: %d", r.StatusCode)
	}
	if r := postForm(t, c, cancel, url.Values{"csrf": {csrf}}, ""); r.StatusCode != 401 {
		t.Fatalf("no auth: %d", r.StatusCode)
	}
	if j, _ := e.be.GetJob(context.Background(), e.ids.queued); j.State != core.StateQueued {
		t.Fatal("a refused form changed the job")
	}
	r := postForm(t, c, cancel, url.Values{"csrf": {csrf}}, adminToken)
	if r.StatusCode != 303 || r.Header.Get("Location") != "../"+e.ids.queued {
		t.Fatalf("cancel: %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	if j, _ := e.be.GetJob(context.Background(), e.ids.queued); j.State != core.StateCancelled {
		t.Fatal("cancel did not happen")
	}
	r = postForm(t, c, srv.URL+"/ops/admin/jobs/"+e.ids.queued+"/retry", url.Values{"csrf": {csrf}}, adminToken)
	if j, _ := e.be.GetJob(context.Background(), e.ids.queued); r.StatusCode != 303 || j.State != core.StateQueued {
		t.Fatalf("retry: %d %s", r.StatusCode, j.State)
	}
	r = postForm(t, c, srv.URL+"/ops/admin/queues/mail/pause", url.Values{"csrf": {csrf}}, adminToken)
	if cfg, _ := e.be.GetQueueConfig(context.Background(), "mail"); r.StatusCode != 303 || r.Header.Get("Location") != "../../" || !cfg.Paused {
		t.Fatalf("pause: %d %v", r.StatusCode, cfg)
	}
	r = postForm(t, c, srv.URL+"/ops/admin/queues/mail/resume", url.Values{"csrf": {csrf}}, adminToken)
	if cfg, _ := e.be.GetQueueConfig(context.Background(), "mail"); r.StatusCode != 303 || cfg.Paused {
		t.Fatalf("resume: %d %v", r.StatusCode, cfg)
	}
	r = postForm(t, c, srv.URL+"/ops/admin/jobs/"+e.ids.succeeded+"/cancel", url.Values{"csrf": {csrf}}, adminToken)
	if r.StatusCode != 409 {
		t.Fatalf("cancel of a succeeded job: %d", r.StatusCode)
	}
}

func TestDashboardLoginSession(t *testing.T) {
	e := newEnv(t, Tokens([]string{readToken}, []string{adminToken}))
	srv := mounted(t, e.h)
	jar, _ := cookiejar.New(nil)
	c := srv.Client()
	c.Jar = jar
	code, html := getPage(t, c, srv.URL+"/ops/admin/")
	if code != 401 {
		t.Fatalf("before login: %d", code)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(html)
	if csrf == nil {
		t.Fatal("login form lacks its CSRF token")
	}
	if r := postForm(t, c, srv.URL+"/ops/admin/login", url.Values{"csrf": {csrf[1]}, "token": {"nope"}}, ""); r.StatusCode != 401 {
		t.Fatalf("bad login: %d", r.StatusCode)
	}
	if r := postForm(t, c, srv.URL+"/ops/admin/login", url.Values{"csrf": {csrf[1]}, "token": {readToken}}, ""); r.StatusCode != 200 {
		t.Fatalf("login: %d", r.StatusCode)
	}
	u, _ := url.Parse(srv.URL + "/ops/admin/")
	var session *http.Cookie
	for _, c := range jar.Cookies(u) {
		if c.Name == sessionCookie {
			session = c
		}
	}
	if session == nil || session.Value == readToken || strings.Contains(session.Value, readToken) {
		t.Fatalf("session cookie: %v", jar.Cookies(u))
	}
	code, html = getPage(t, c, srv.URL+"/ops/admin/jobs/"+e.ids.queued)
	if code != 200 || strings.Contains(html, `id="cancel"`) || !strings.Contains(html, "Log out") {
		t.Fatalf("read session: %d", code)
	}
	// Logging out (with the session's own form token) redirects to the
	// login form, which answers 200.
	if r := postForm(t, c, srv.URL+"/ops/admin/logout", url.Values{"csrf": {formToken(t, c, srv.URL+"/ops/admin/", "")}}, ""); r.StatusCode != 200 || r.Request.URL.Path != "/ops/admin/login" {
		t.Fatalf("logout: %d %s", r.StatusCode, r.Request.URL)
	}
	if code, _ = getPage(t, c, srv.URL+"/ops/admin/"); code != 401 {
		t.Fatalf("after logout: %d", code)
	}
}

func TestDashboardJobListPages(t *testing.T) {
	e := newEnv(t, NoAuth())
	reqs := make([]core.EnqueueRequest, 7)
	for i := range reqs {
		reqs[i] = core.EnqueueRequest{Queue: "bulk", Task: "noop"}
	}
	if _, err := e.be.Enqueue(context.Background(), reqs); err != nil {
		t.Fatal(err)
	}
	srv := mounted(t, e.h)
	nextRE := regexp.MustCompile(`href="([^"]*)" id="next"`)
	rowRE := regexp.MustCompile(`data-job="([0-9A-Z]+)"`)
	u := srv.URL + "/ops/admin/jobs?queue=bulk&limit=3"
	seen := map[string]bool{}
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("too many pages")
		}
		code, html := getPage(t, srv.Client(), u)
		if code != 200 {
			t.Fatalf("%s: %d", u, code)
		}
		for _, m := range rowRE.FindAllStringSubmatch(html, -1) {
			if seen[m[1]] {
				t.Fatalf("job %s on two pages", m[1])
			}
			seen[m[1]] = true
		}
		m := nextRE.FindStringSubmatch(html)
		if m == nil {
			break
		}
		base, _ := url.Parse(u)
		ref, _ := url.Parse(strings.ReplaceAll(m[1], "&amp;", "&"))
		u = base.ResolveReference(ref).String()
		if !strings.Contains(u, "queue=bulk") || !strings.Contains(u, "limit=3") {
			t.Fatalf("next link lost the filters: %s", u)
		}
	}
	if len(seen) != 7 {
		t.Fatalf("paged through %d jobs, want 7", len(seen))
	}
}

// TestDashboardJobTimeline: the job page's timeline shows each run of the
// job in attempt order with its outcome, worker, start, end, duration and
// token, and the error of a failed run (escaped); an attempt that runs is
// shown as still running.
func TestDashboardJobTimeline(t *testing.T) {
	e := newEnv(t, NoAuth())
	ctx := context.Background()
	res, err := e.be.Enqueue(ctx, []core.EnqueueRequest{{Queue: "tl", Task: "flaky", MaxAttempts: 3}})
	if err != nil {
		t.Fatal(err)
	}
	id := res[0].Job.ID
	claim := func(worker string) core.Job {
		t.Helper()
		js, err := e.be.Claim(ctx, core.ClaimRequest{Queue: "tl", WorkerID: worker, Limit: 1, LeaseTTL: time.Minute})
		if err != nil || len(js) != 1 {
			t.Fatalf("claim by %s: %d jobs, %v", worker, len(js), err)
		}
		return js[0]
	}
	ts := funcs["ts"].(func(time.Time) string)
	start1 := e.clock.Now()
	j := claim("worker-a")
	e.clock.Advance(1500 * time.Millisecond)
	end1 := e.clock.Now()
	if _, err := e.be.Fail(ctx, core.Failure{Lease: j.Lease, Error: "disk full on <tmp>", RetryAt: end1}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	start2 := e.clock.Now()
	j = claim("worker-b")
	e.clock.Advance(250 * time.Millisecond)
	end2 := e.clock.Now()
	if errs, err := e.be.Complete(ctx, []core.Completion{{Lease: j.Lease}}); err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	_, html := getPage(t, e.srv.Client(), e.srv.URL+"/jobs/"+id)
	runs := timelineItems(t, html)
	want := []struct {
		status, worker, when, err string
	}{
		{"failed", "worker-a", ts(start1) + " → " + ts(end1) + " (1.5s) · token 1", "disk full on &lt;tmp&gt;"},
		{"succeeded", "worker-b", ts(start2) + " → " + ts(end2) + " (250ms) · token 2", ""},
	}
	if len(runs) != len(want) {
		t.Fatalf("the timeline shows %d runs, want %d:\n%s", len(runs), len(want), html)
	}
	for i, w := range want {
		r := runs[i]
		if r.class != w.status || !strings.Contains(r.body, fmt.Sprintf("attempt %d on <code>%s</code>", i+1, w.worker)) ||
			!strings.Contains(r.body, `<div class="when">`+w.when+`</div>`) {
			t.Errorf("run %d is %q %q, want %s, attempt %d on %s, %s", i+1, r.class, r.body, w.status, i+1, w.worker, w.when)
		}
		if hasErr := strings.Contains(r.body, `<div class="err">`); hasErr != (w.err != "") || !strings.Contains(r.body, w.err) {
			t.Errorf("run %d: error shown %v in %q, want %q", i+1, hasErr, r.body, w.err)
		}
	}
	_, html = getPage(t, e.srv.Client(), e.srv.URL+"/jobs/"+e.ids.running)
	runs = timelineItems(t, html)
	if len(runs) != 1 || runs[0].class != "running" || !strings.Contains(runs[0].body, "still running") ||
		!strings.Contains(runs[0].body, "attempt 1 on <code>w1</code>") {
		t.Errorf("the running job's timeline is %+v, want one running attempt of w1, still running", runs)
	}
}

// timelineRun is one entry of a job page's timeline.
type timelineRun struct{ class, body string }

var timelineItem = regexp.MustCompile(`(?s)<li class="([a-z]+)" data-run="[^"]+">(.*?)</li>`)

// timelineItems returns the entries of the timeline of a job page, in
// page order.
func timelineItems(t *testing.T, html string) []timelineRun {
	t.Helper()
	start := strings.Index(html, `<ol class="timeline" id="timeline">`)
	if start < 0 {
		return nil
	}
	end := strings.Index(html[start:], "</ol>")
	if end < 0 {
		t.Fatal("the timeline is not closed")
	}
	var out []timelineRun
	for _, m := range timelineItem.FindAllStringSubmatch(html[start:start+end], -1) {
		out = append(out, timelineRun{class: m[1], body: m[2]})
	}
	return out
}
