package admin

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

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
	for i := 0; i < 1001; i++ {
		huge.Add("id", fmt.Sprintf("id%04d", i))
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
		{"jobs/" + e.ids.running + "/delete", url.Values{"csrf": {csrf}}, adminToken, 409}, // running, no force
	} {
		if r := postForm(t, c, base+c0.path, c0.form, c0.token); r.StatusCode != c0.status {
			t.Errorf("POST %s %v: %d, want %d", c0.path, strings.Join(c0.form["confirm"], ""), r.StatusCode, c0.status)
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
