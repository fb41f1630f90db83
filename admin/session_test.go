package admin

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// browser is an HTTP client with its own cookie jar that does not follow
// redirects.
func browser(srv *httptest.Server) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{
		Transport:     srv.Client().Transport,
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// login logs c in with token through the form and returns the response.
func login(t *testing.T, c *http.Client, base, token string, header ...string) *http.Response {
	t.Helper()
	csrf := formToken(t, c, base+"/ops/admin/login", "")
	req, _ := http.NewRequest("POST", base+"/ops/admin/login", strings.NewReader(url.Values{"csrf": {csrf}, "token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	return resp
}

// cookieOf returns the named cookie a response set.
func cookieOf(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// status GETs u with the given cookie and returns the status.
func status(t *testing.T, c *http.Client, u string, cookie *http.Cookie) int {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	if cookie != nil {
		req.AddCookie(cookie)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestSessionCookieReplayAfterLogout: the login cookie holds a session id,
// not the token, and a copy of it is worthless once its session logged
// out or expired.
func TestSessionCookieReplayAfterLogout(t *testing.T) {
	e := newEnv(t, Tokens([]string{readToken}, []string{adminToken}), func(o *Options) { o.SessionTTL = time.Hour })
	srv := mounted(t, e.h)
	victim := browser(srv)
	session := cookieOf(login(t, victim, srv.URL, adminToken), sessionCookie)
	if session == nil || strings.Contains(session.Value, adminToken) || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode {
		t.Fatalf("session cookie %+v", session)
	}
	home := srv.URL + "/ops/admin/"
	attacker := browser(srv) // holds a stolen copy of the cookie only
	if code := status(t, attacker, home, session); code != 200 {
		t.Fatalf("the cookie before logout: %d", code)
	}
	csrf := formToken(t, victim, home, "")
	if r := postForm(t, victim, srv.URL+"/ops/admin/logout", url.Values{"csrf": {csrf}}, ""); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", r.StatusCode)
	}
	if code := status(t, attacker, home, session); code != http.StatusUnauthorized {
		t.Fatalf("the cookie replayed after logout: %d, want 401", code)
	}
	r := postForm(t, attacker, srv.URL+"/ops/admin/jobs/"+e.ids.queued+"/cancel", url.Values{"csrf": {csrf}}, "")
	if j, _ := e.be.GetJob(context.Background(), e.ids.queued); r.StatusCode < 400 || j.State != core.StateQueued {
		t.Fatalf("a form with the replayed cookie: %d, job %s", r.StatusCode, j.State)
	}

	// A session ends at its TTL, by the handler's clock.
	session = cookieOf(login(t, browser(srv), srv.URL, readToken), sessionCookie)
	if code := status(t, attacker, home, session); code != 200 {
		t.Fatalf("a fresh session: %d", code)
	}
	e.clock.Advance(time.Hour)
	if code := status(t, attacker, home, session); code != http.StatusUnauthorized {
		t.Fatalf("an expired session: %d, want 401", code)
	}
}

// TestCSRFTokenBoundToSession: a form token is good only for the session
// (or, before login, the browser) it was shown to; one taken from another
// session, or from the login page, changes nothing.
func TestCSRFTokenBoundToSession(t *testing.T) {
	e := newEnv(t, Tokens([]string{readToken}, []string{adminToken}))
	srv := mounted(t, e.h)
	victim, attacker := browser(srv), browser(srv)
	login(t, victim, srv.URL, adminToken)
	login(t, attacker, srv.URL, adminToken)
	home := srv.URL + "/ops/admin/"
	cancel := srv.URL + "/ops/admin/jobs/" + e.ids.queued + "/cancel"
	theirs := formToken(t, attacker, home, "")
	loginPage := formToken(t, browser(srv), srv.URL+"/ops/admin/login", "")
	for name, tok := range map[string]string{"another session's": theirs, "the login page's": loginPage} {
		if r := postForm(t, victim, cancel, url.Values{"csrf": {tok}}, ""); r.StatusCode != http.StatusForbidden {
			t.Errorf("%s token: %d, want 403", name, r.StatusCode)
		}
	}
	if j, _ := e.be.GetJob(context.Background(), e.ids.queued); j.State != core.StateQueued {
		t.Fatal("a form with a foreign token changed the job")
	}
	if r := postForm(t, victim, cancel, url.Values{"csrf": {formToken(t, victim, home, "")}}, ""); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("the session's own token: %d", r.StatusCode)
	}
	if j, _ := e.be.GetJob(context.Background(), e.ids.queued); j.State != core.StateCancelled {
		t.Fatal("the cancel did not happen")
	}
	// Each session shows its own token.
	if formToken(t, victim, home, "") == theirs {
		t.Fatal("two sessions share a CSRF token")
	}
}

// TestHostAllowList: served on a loopback address, the handler answers
// only requests that name a loopback host, so a DNS-rebinding page (whose
// requests carry the attacker's host name) reads nothing; a configured
// list replaces that default, and "*" turns the check off.
func TestHostAllowList(t *testing.T) {
	get := func(srv *httptest.Server, host string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/queues", nil)
		req.Host = host
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.Error.Code
	}
	e := newEnv(t, NoAuthReadOnly())
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.srv.URL, "http://"))
	for host, want := range map[string]int{
		"127.0.0.1:" + port:          200,
		"localhost:" + port:          200,
		"LocalHost":                  200,
		"app.localhost:" + port:      200,
		"[::1]:" + port:              200,
		"attacker.example:" + port:   http.StatusForbidden,
		"attacker.example":           http.StatusForbidden,
		"127.0.0.1.attacker.example": http.StatusForbidden,
		"10.1.2.3:" + port:           http.StatusForbidden,
	} {
		code, ecode := get(e.srv, host)
		if code != want || want == http.StatusForbidden && ecode != "host_not_allowed" {
			t.Errorf("loopback server, Host %q: %d %q, want %d", host, code, ecode, want)
		}
	}

	listed := newEnv(t, NoAuthReadOnly(), func(o *Options) { o.AllowedHosts = []string{"admin.example.com", "*.ops.example.com"} })
	for host, want := range map[string]int{
		"admin.example.com":         200,
		"Admin.Example.COM:8443":    200,
		"x.ops.example.com":         200,
		"ops.example.com":           http.StatusForbidden,
		"localhost:" + port:         http.StatusForbidden,
		"attacker.example":          http.StatusForbidden,
		"admin.example.com.evil.io": http.StatusForbidden,
	} {
		if code, _ := get(listed.srv, host); code != want {
			t.Errorf("AllowedHosts, Host %q: %d, want %d", host, code, want)
		}
	}

	open := newEnv(t, NoAuthReadOnly(), func(o *Options) { o.AllowedHosts = []string{"*"} })
	if code, _ := get(open.srv, "attacker.example"); code != 200 {
		t.Errorf(`AllowedHosts "*": %d, want 200`, code)
	}

	// Served on another address, the default checks nothing (the handler
	// cannot know the names it is reached by).
	req := httptest.NewRequest("GET", "/api/v1/queues", nil)
	req.Host = "anything.example"
	req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 80}))
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("non-loopback server: %d, want 200", rec.Code)
	}

	for _, bad := range [][]string{{""}, {"host:80"}, {"a/b"}, {"*.*.x"}, {"x.*"}} {
		if _, err := New(Options{Backend: e.be, Auth: NoAuth(), AllowedHosts: bad}); err == nil {
			t.Errorf("AllowedHosts %q accepted", bad)
		}
	}
}

// TestForwardedProtoTrustedOnlyFromProxies: X-Forwarded-Proto: https makes
// the login cookie Secure only when the request comes from a configured
// proxy; the same header from any other peer is ignored.
func TestForwardedProtoTrustedOnlyFromProxies(t *testing.T) {
	for name, c := range map[string]struct {
		proxies []string
		header  bool
		secure  bool
	}{
		"no header":                     {nil, false, false},
		"spoofed, no proxies":           {nil, true, false},
		"spoofed, other proxy":          {[]string{"10.0.0.0/8", "192.0.2.1"}, true, false},
		"from the proxy":                {[]string{"127.0.0.1"}, true, true},
		"from the proxy's network":      {[]string{"127.0.0.0/8"}, true, true},
		"from the proxy, without https": {[]string{"127.0.0.1"}, false, false},
	} {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			e := newEnv(t, Tokens(nil, []string{adminToken}), func(o *Options) { o.TrustedProxies = c.proxies })
			srv := mounted(t, e.h)
			var header []string
			if c.header {
				header = []string{"X-Forwarded-Proto", "https"}
			}
			session := cookieOf(login(t, browser(srv), srv.URL, adminToken, header...), sessionCookie)
			if session == nil || session.Secure != c.secure {
				t.Fatalf("session cookie %+v, want Secure=%v", session, c.secure)
			}
		})
	}
	if _, err := New(Options{Backend: newEnv(t, NoAuth()).be, Auth: NoAuth(), TrustedProxies: []string{"proxy.example"}}); err == nil {
		t.Error("a host name accepted as a trusted proxy")
	}
}
