package admin

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
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
