package admin

import (
	"net/http"
	"testing"
)

// TestProtect: an endpoint mounted beside the handler with Protect takes
// the handler's Host check and the permission of the Authorization
// header, never the dashboard's session cookie.
func TestProtect(t *testing.T) {
	e := newEnv(t, Tokens([]string{readToken}, []string{adminToken}))
	teapot := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	mux := http.NewServeMux()
	mux.Handle("/ops/admin/", http.StripPrefix("/ops/admin", e.h))
	mux.Handle("/read", e.h.Protect(PermRead, teapot))
	mux.Handle("/admin", e.h.Protect(PermAdmin, teapot))
	mux.Handle("/open", e.h.Protect(PermNone, teapot))
	srv := newTestServer(t, mux)
	session := cookieOf(login(t, browser(srv), srv.URL, adminToken), sessionCookie)
	if session == nil {
		t.Fatal("no session cookie")
	}
	get := func(path, token, host string, cookie *http.Cookie) int {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if host != "" {
			req.Host = host
		}
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		path, token, host string
		cookie            *http.Cookie
		want              int
	}{
		{"/read", "", "", nil, http.StatusUnauthorized},
		{"/read", "nope", "", nil, http.StatusUnauthorized},
		{"/read", readToken, "", nil, http.StatusTeapot},
		{"/read", adminToken, "", nil, http.StatusTeapot},
		{"/read", "", "", session, http.StatusUnauthorized},
		{"/admin", readToken, "", nil, http.StatusForbidden},
		{"/admin", adminToken, "", nil, http.StatusTeapot},
		{"/open", "", "", nil, http.StatusTeapot},
		{"/open", "", "attacker.example", nil, http.StatusForbidden},
		{"/read", readToken, "attacker.example", nil, http.StatusForbidden},
	} {
		if got := get(c.path, c.token, c.host, c.cookie); got != c.want {
			t.Errorf("GET %s token %q host %q cookie %v: %d, want %d", c.path, c.token, c.host, c.cookie != nil, got, c.want)
		}
	}
}
