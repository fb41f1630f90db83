package admin

import (
	"fmt"
	stdhtml "html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// TestDashboardOperationFormsRefuseHostileInput posts the operations forms
// with what a careless or hostile caller might send: each gets a 4xx and
// changes nothing.
func TestDashboardOperationFormsRefuseHostileInput(t *testing.T) {
	e := newEnv(t, Tokens([]string{readToken}, []string{adminToken}))
	ids := failMany(t, e, "bulk", "boom", 5)
	srv := mounted(t, e.h)
	c := srv.Client()
	c.Jar, _ = cookiejar.New(nil)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	base := srv.URL + "/ops/admin/"
	csrf := formToken(t, c, base+"failed", adminToken)
	before := fmt.Sprint(e.states("bulk"), e.states("mail"))

	huge := url.Values{"csrf": {csrf}}
	var hugeIDs []string
	for i := 0; i < 1001; i++ {
		huge.Add("id", fmt.Sprintf("id%04d", i))
		hugeIDs = append(hugeIDs, ids[i%len(ids)])
	}
	// The job list's search fields, as its bulk forms carry them, each
	// with a confirm that would act on everything if the filter passed.
	bulkFilter := func(filter string) url.Values {
		return url.Values{"csrf": {csrf}, "filter": {filter}, "confirm_count": {"1001"}, "confirm_all": {"1"}}
	}
	for _, c0 := range []struct {
		path   string
		form   url.Values
		token  string
		status int
	}{
		{"failed/retry", url.Values{"id": ids}, adminToken, 403},                                            // no CSRF token
		{"failed/retry", url.Values{"csrf": {csrf}, "id": ids}, readToken, 403},                             // read only
		{"failed/retry", huge, adminToken, 400},                                                             // too many ids
		{"failed/retry", url.Values{"csrf": {csrf}}, adminToken, 400},                                       // none
		{"failed/retry", url.Values{"csrf": {csrf}, "id": ids, "confirm_count": {"4"}}, adminToken, 409},    // more than confirmed
		{"failed/retry", url.Values{"csrf": {csrf}, "id": ids, "confirm_count": {"many"}}, adminToken, 400}, // not a count
		{"queues/bulk/delete", url.Values{"csrf": {csrf}, "confirm": {"bulkk"}}, adminToken, 400},           // wrong name
		{"queues/bulk/delete", url.Values{"csrf": {csrf}}, adminToken, 400},                                 // no name
		{"enqueue", url.Values{"csrf": {csrf}, "task": {"t"}, "queue": {"mail"}, "payload": {"{"}}, adminToken, 400},
		{"enqueue", url.Values{"csrf": {csrf}, "task": {"t"}, "queue": {"mail"}, "headers": {"<script>"}}, adminToken, 400},
		{"enqueue", url.Values{"csrf": {csrf}, "task": {"t"}, "queue": {"mail"}, "priority": {"1e9"}}, adminToken, 400},
		{"enqueue", url.Values{"csrf": {csrf}, "task": {"bad task"}, "queue": {"mail"}}, adminToken, 400},
		{"jobs/" + e.ids.running + "/delete", url.Values{"csrf": {csrf}}, adminToken, 409},                                // running, no force
		{"bulk/delete", bulkFilter("ids=" + strings.Join(hugeIDs, ",")), adminToken, 400},                                 // too many ids
		{"bulk/delete", bulkFilter("ids=" + strings.Join(hugeIDs, "&ids=")), adminToken, 400},                             // too many, repeated
		{"bulk/delete", bulkFilter("created_from=2026-01-03T00:00:00Z&created_to=2026-01-02T00:00:00Z"), adminToken, 400}, // reversed
		{"bulk/delete", bulkFilter("created_from=2026-01-02T00:00:00Z&created_to=2026-01-02T00:00:00Z"), adminToken, 400}, // empty
		{"bulk/delete", bulkFilter("finished_from=2026-01-02 03:04:05"), adminToken, 400},                                 // not RFC 3339
		{"bulk/cancel", bulkFilter("finished_to=tomorrow&ids=" + ids[0]), adminToken, 400},                                // not a time
		{"bulk/retry", bulkFilter("created_to=2026-01-02T00:00:00Z&created_to=2026-01-03T00:00:00Z"), adminToken, 400},    // twice
	} {
		if r := postForm(t, c, base+c0.path, c0.form, c0.token); r.StatusCode != c0.status {
			t.Errorf("POST %s %v: %d, want %d", c0.path, c0.form.Get("confirm")+shorten(c0.form.Get("filter"), 80), r.StatusCode, c0.status)
		}
	}
	if after := fmt.Sprint(e.states("bulk"), e.states("mail")); after != before {
		t.Fatalf("refused forms changed jobs: %s, was %s", after, before)
	}
	if _, err := e.be.GetJob(t.Context(), e.ids.running); err != nil {
		t.Fatalf("the running job went: %v", err)
	}

	// The enqueue form keeps what was typed and says what is wrong, as
	// text.
	form := url.Values{"csrf": {csrf}, "task": {"t"}, "payload": {`{"x": "</textarea><script>alert(1)</script>"`}}
	req, _ := http.NewRequest("POST", base+"enqueue", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	html := ownScript.ReplaceAllString(string(body), "")
	if resp.StatusCode != 400 || strings.Contains(html, "<script") || !strings.Contains(html, "not valid JSON") ||
		!strings.Contains(html, "&lt;/textarea&gt;&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatalf("bad payload: %d\n%s", resp.StatusCode, html)
	}
}

func TestDashboardJobSearch(t *testing.T) {
	e := newEnv(t, NoAuth())
	_, html := getPage(t, e.srv.Client(), e.srv.URL+"/jobs?header_key=trace&header_value=abc&id_prefix=&queue=")
	if !strings.Contains(html, `data-job="`+e.ids.queued+`"`) || strings.Contains(html, `data-job="`+e.ids.failed+`"`) || !strings.Contains(html, `value="abc"`) {
		t.Fatalf("header search page:\n%s", html)
	}
	if code, _ := getPage(t, e.srv.Client(), e.srv.URL+"/jobs?header_value=abc"); code != 400 {
		t.Fatalf("a value without a key: %d", code)
	}
}

// TestDashboardBulkOnTheJobList previews and confirms bulk actions on the
// job list's filter: the confirmation shows the count, the confirm changes
// exactly those jobs, and a filter that matches everything needs its box
// ticked.
func TestDashboardBulkOnTheJobList(t *testing.T) {
	e := newEnv(t, NoAuth())
	failMany(t, e, "bulk", "boom", 5)
	srv := mounted(t, e.h)
	c := srv.Client()
	c.Jar, _ = cookiejar.New(nil)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	base := srv.URL + "/ops/admin/"
	csrf := formToken(t, c, base+"jobs?queue=bulk&state=failed", "")
	post := func(path string, form url.Values) (*http.Response, string) {
		t.Helper()
		form.Set("csrf", csrf)
		resp, err := c.PostForm(base+path, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	filter := "queue=bulk&state=failed"
	resp, html := post("bulk/retry", url.Values{"filter": {filter}})
	if resp.StatusCode != 200 || !strings.Contains(html, `data-count="5"`) || !strings.Contains(html, "Retry 5 jobs") {
		t.Fatalf("retry preview: %d\n%s", resp.StatusCode, html)
	}
	if got := e.states("bulk"); got[core.StateFailed] != 5 {
		t.Fatalf("the preview changed jobs: %v", got)
	}
	resp, _ = post("bulk/retry", url.Values{"filter": {filter}, "confirm_count": {"5"}})
	loc := resp.Header.Get("Location")
	if resp.StatusCode != 303 || !strings.Contains(loc, "done=retry") {
		t.Fatalf("retry confirm: %d %q", resp.StatusCode, loc)
	}
	if got := e.states("bulk"); got[core.StateQueued] != 5 || len(got) != 1 {
		t.Fatalf("after the retry: %v", got)
	}
	_, html = getPage(t, c, base+strings.TrimPrefix(loc, "../"))
	if !strings.Contains(html, "retry: 5 changed, 0 skipped, 0 failed") {
		t.Fatalf("the job list lacks the notice:\n%s", html)
	}

	// Every job: the confirmation needs the box.
	resp, html = post("bulk/cancel", url.Values{"filter": {""}})
	if resp.StatusCode != 200 || !strings.Contains(html, `id="confirm-all"`) || !strings.Contains(html, "Cancel 8 jobs") {
		t.Fatalf("match-all preview: %d\n%s", resp.StatusCode, html)
	}
	before := fmt.Sprint(e.states("bulk"), e.states("mail"), e.states("reports"))
	if resp, _ := post("bulk/cancel", url.Values{"filter": {""}, "confirm_count": {"8"}}); resp.StatusCode != 400 {
		t.Fatalf("match-all confirm without the box: %d", resp.StatusCode)
	}
	if resp, _ := post("bulk/cancel", url.Values{"filter": {"queue=bulk"}, "confirm_count": {"2"}}); resp.StatusCode != 409 {
		t.Fatalf("a confirm below the count: %d", resp.StatusCode)
	}
	if resp, _ := post("bulk/cancel", url.Values{"filter": {"colour=red"}}); resp.StatusCode != 400 {
		t.Fatalf("an unknown filter field: %d", resp.StatusCode)
	}
	if after := fmt.Sprint(e.states("bulk"), e.states("mail"), e.states("reports")); after != before {
		t.Fatalf("refused confirms changed jobs: %s, was %s", after, before)
	}
	resp, _ = post("bulk/cancel", url.Values{"filter": {""}, "confirm_count": {"8"}, "confirm_all": {"1"}})
	if resp.StatusCode != 303 {
		t.Fatalf("match-all confirm: %d", resp.StatusCode)
	}
	if got := e.states("bulk"); got[core.StateCancelled] != 5 {
		t.Fatalf("after cancelling everything: %v", got)
	}
}

var (
	filterFormRE = regexp.MustCompile(`(?s)<form method="get"[^>]*class="filters">(.*?)</form>`)
	fieldNameRE  = regexp.MustCompile(`<(?:input|select) name="([a-z_]+)"`)
	dataJobRE    = regexp.MustCompile(`data-job="([^"]+)"`)
	bulkFilterRE = regexp.MustCompile(`<input type="hidden" name="filter" value="([^"]*)">`)
)

// submitFilters fills the job list's filter form as a browser sends it:
// every field of the form, empty unless set, and nothing else. It returns
// the page the form leads to, the ids of its jobs, sorted, and the filter
// its bulk forms carry.
func submitFilters(t *testing.T, c *http.Client, base string, set url.Values) (code int, html string, jobs []string, bulk url.Values) {
	t.Helper()
	_, page := getPage(t, c, base+"jobs")
	m := filterFormRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the job list has no filter form:\n%s", page)
	}
	q := url.Values{}
	for _, f := range fieldNameRE.FindAllStringSubmatch(m[1], -1) {
		q.Set(f[1], "")
	}
	for k, vs := range set {
		if _, ok := q[k]; !ok {
			t.Fatalf("the filter form has no %s field", k)
		}
		q[k] = vs
	}
	code, html = getPage(t, c, base+"jobs?"+q.Encode())
	for _, j := range dataJobRE.FindAllStringSubmatch(html, -1) {
		jobs = append(jobs, j[1])
	}
	slices.Sort(jobs)
	if b := bulkFilterRE.FindStringSubmatch(html); b != nil {
		bulk, _ = url.ParseQuery(stdhtml.UnescapeString(b[1]))
	}
	return code, html, jobs, bulk
}

// TestDashboardJobListSearchByIDsAndTimes submits the job list's filter
// form with an id list and with created and finished ranges: exactly the
// matching jobs are listed, the form shows what it searched, and the bulk
// forms act on the same jobs. Bad lists and ranges are a 400.
func TestDashboardJobListSearchByIDsAndTimes(t *testing.T) {
	e := newEnv(t, NoAuth())
	srv := mounted(t, e.h)
	c := srv.Client()
	c.Jar, _ = cookiejar.New(nil)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	base := srv.URL + "/ops/admin/"
	job := func(id string) core.Job {
		t.Helper()
		j, err := e.be.GetJob(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	sorted := func(ids ...string) []string { return slices.Sorted(slices.Values(ids)) }

	// An id list, as typed: spaces, and an id that does not exist.
	code, html, jobs, bulk := submitFilters(t, c, base, url.Values{"ids": {e.ids.succeeded + ", " + e.ids.queued + ",nope"}})
	if want := sorted(e.ids.succeeded, e.ids.queued); code != 200 || !slices.Equal(jobs, want) {
		t.Fatalf("ids: %d %v, want %v\n%s", code, jobs, want, html)
	}
	if !strings.Contains(html, `value="`+e.ids.succeeded+`, `+e.ids.queued+`, nope"`) {
		t.Fatalf("the ids field does not show the list:\n%s", html)
	}
	if got := bulk["ids"]; len(got) != 1 || got[0] != e.ids.succeeded+", "+e.ids.queued+",nope" {
		t.Fatalf("the bulk forms carry %v", bulk)
	}

	// A created range is half open: from the failed job up to, not
	// including, the queued job.
	from, to := job(e.ids.failed).CreatedAt, job(e.ids.queued).CreatedAt
	rng := url.Values{"created_from": {from.Format(time.RFC3339Nano)}, "created_to": {to.Format(time.RFC3339Nano)}}
	code, html, jobs, bulk = submitFilters(t, c, base, rng)
	if want := sorted(e.ids.failed, e.ids.running); code != 200 || !slices.Equal(jobs, want) {
		t.Fatalf("created range: %d %v, want %v\n%s", code, jobs, want, html)
	}
	if !strings.Contains(html, `name="created_from" value="`+from.Format(time.RFC3339Nano)+`"`) ||
		!strings.Contains(html, `name="created_to" value="`+to.Format(time.RFC3339Nano)+`"`) {
		t.Fatalf("the created fields do not show the range:\n%s", html)
	}
	if bulk.Get("created_from") != rng.Get("created_from") || bulk.Get("created_to") != rng.Get("created_to") {
		t.Fatalf("the bulk forms carry %v", bulk)
	}
	// The same instant with an offset finds the same jobs and is shown in UTC.
	plus2 := from.In(time.FixedZone("", 2*3600)).Format(time.RFC3339Nano)
	if _, html, jobs, _ = submitFilters(t, c, base, url.Values{"created_from": {plus2}, "created_to": rng["created_to"]}); !slices.Equal(jobs, sorted(e.ids.failed, e.ids.running)) ||
		!strings.Contains(html, `value="`+from.Format(time.RFC3339Nano)+`"`) {
		t.Fatalf("created range with an offset: %v\n%s", jobs, html)
	}

	// A finished range with ids: of the two, only the finished one.
	fin := job(e.ids.succeeded).FinishedAt
	code, _, jobs, _ = submitFilters(t, c, base, url.Values{"ids": {e.ids.succeeded + "," + e.ids.queued}, "finished_from": {fin.Format(time.RFC3339Nano)}})
	if code != 200 || !slices.Equal(jobs, []string{e.ids.succeeded}) {
		t.Fatalf("finished range: %d %v", code, jobs)
	}

	// The bulk forms act on what the list shows: cancel the listed ids.
	csrf := formToken(t, c, base+"jobs", "")
	_, _, _, bulk = submitFilters(t, c, base, url.Values{"ids": {e.ids.queued + "," + e.ids.failed}})
	form := url.Values{"csrf": {csrf}, "filter": {bulk.Encode()}}
	if code, html := postPage(t, c, base+"bulk/cancel", form); code != 200 || !strings.Contains(html, `data-count="1"`) {
		t.Fatalf("cancel preview of the ids: %d\n%s", code, html)
	}
	form.Set("confirm_count", "1")
	if resp := postForm(t, c, base+"bulk/cancel", form, ""); resp.StatusCode != 303 {
		t.Fatalf("cancel confirm of the ids: %d", resp.StatusCode)
	}
	if j := job(e.ids.queued); j.State != core.StateCancelled {
		t.Fatalf("the listed queued job is %s", j.State)
	}
	if j := job(e.ids.hostile); j.State != core.StateQueued {
		t.Fatalf("a queued job not listed is %s", j.State)
	}

	// Bad lists and ranges are a 400 that says what is wrong.
	long := make([]string, core.MaxPageSize+1)
	for i := range long {
		long[i] = fmt.Sprintf("id%d", i)
	}
	for _, c0 := range []struct {
		set  url.Values
		want string
	}{
		{url.Values{"ids": {strings.Join(long, ",")}}, "more than 1000 ids"},
		{url.Values{"created_from": {"2026-01-02 03:04:05"}}, "is not an RFC 3339 time"},
		{url.Values{"created_to": {"2026-01-02T03:04"}}, "is not an RFC 3339 time"},
		{url.Values{"finished_from": {"<script>"}}, "&#34;&lt;script&gt;&#34; is not an RFC 3339 time"},
		{url.Values{"created_from": {"2026-01-03T00:00:00Z"}, "created_to": {"2026-01-02T00:00:00Z"}}, "created_from: must be before created_to"},
		{url.Values{"finished_from": {"2026-01-02T00:00:00Z"}, "finished_to": {"2026-01-02T00:00:00Z"}}, "finished_from: must be before finished_to"},
	} {
		code, html, jobs, _ := submitFilters(t, c, base, c0.set)
		if code != 400 || len(jobs) != 0 || !strings.Contains(html, c0.want) {
			t.Errorf("%v: %d %v, want 400 with %q\n%s", shorten(c0.set.Encode(), 80), code, jobs, c0.want, ownScript.ReplaceAllString(html, ""))
		}
	}
}

// TestFilterTakesTheShownTime: a time copied from a page (the "ts"
// layout) is a valid bound of a filter's range, equal to the time shown,
// and a time without a zone still is not.
func TestFilterTakesTheShownTime(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	shown := funcs["ts"].(func(time.Time) string)(at)
	r, err := parseRange(url.Values{"created_from": {shown}, "created_to": {"2026-01-02T05:00:00+01:00"}}, "created")
	if err != nil {
		t.Fatalf("parseRange(%q): %v", shown, err)
	}
	if !r.From.Equal(at) || !r.To.Equal(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC).Add(time.Hour)) {
		t.Fatalf("range %v – %v, want %v – 04:00 UTC", r.From, r.To, at)
	}
	if _, err := parseRange(url.Values{"created_from": {"2026-01-02 03:04:05"}}, "created"); err == nil {
		t.Fatal("a time without a zone was taken")
	}
}
