package admin

import (
	"errors"
	"net/http"
	"testing"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

func TestNewRefusesMissingOrBadOptions(t *testing.T) {
	be := mem.New(mem.Options{})
	defer be.Close()
	cases := map[string]Options{
		"zero auth":       {Backend: be},
		"no backend":      {Auth: NoAuth()},
		"both":            {Backend: be, Router: core.NewRouter(be), Auth: NoAuth()},
		"no tokens":       {Backend: be, Auth: Tokens(nil, nil)},
		"empty token":     {Backend: be, Auth: Tokens([]string{""}, []string{"x"})},
		"nil verifier":    {Backend: be, Auth: Verifier(nil)},
		"empty router":    {Router: &core.Router{}, Auth: NoAuth()},
		"bad task":        {Backend: be, Auth: NoAuth(), Tasks: []string{"a b"}},
		"negative body":   {Backend: be, Auth: NoAuth(), MaxBodyBytes: -1},
		"negative limits": {Backend: be, Auth: NoAuth(), Limits: core.Limits{MaxBatch: -1}},
	}
	for name, o := range cases {
		if _, err := New(o); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("%s: New = %v, want ErrInvalidArgument", name, err)
		}
	}
}

func TestAuthTokensFailClosed(t *testing.T) {
	e := newEnv(t, Tokens([]string{readToken}, []string{adminToken}))
	id := e.ids.queued
	resp, _ := e.do("GET", "/api/v1/jobs", "", nil, nil)
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no token: %d %v", resp.StatusCode, resp.Header)
	}
	e.expect("GET", "/api/v1/jobs", "", nil, 401, "unauthorized")
	e.expect("GET", "/api/v1/jobs", "wrong", nil, 401, "unauthorized")
	e.expect("GET", "/api/v1/jobs", readToken+"x", nil, 401, "unauthorized")
	e.expect("POST", "/api/v1/jobs/"+id+"/cancel", "", nil, 401, "unauthorized")
	e.expect("GET", "/api/v1/jobs", readToken, nil, 200, "")
	e.expect("GET", "/api/v1/jobs/"+id, readToken, nil, 200, "")
	e.expect("POST", "/api/v1/jobs/"+id+"/cancel", readToken, nil, 403, "forbidden")
	e.expect("POST", "/api/v1/queues/mail/pause", readToken, nil, 403, "forbidden")
	e.expect("PUT", "/api/v1/tasks/t/config", readToken, map[string]any{}, 403, "forbidden")
	e.expect("POST", "/api/v1/jobs", readToken, map[string]any{"task": "t"}, 403, "forbidden")
	if j, _ := e.be.GetJob(t.Context(), id); j.State != core.StateQueued {
		t.Fatalf("read token changed the job: %s", j.State)
	}
	e.expect("POST", "/api/v1/jobs/"+id+"/cancel", adminToken, nil, 200, "")
	e.expect("GET", "/api/v1/jobs", adminToken, nil, 200, "")
	// The document needs no token.
	e.expect("GET", "/api/v1/openapi.json", "", nil, 200, "")

	// A non-bearer scheme authenticates nobody.
	req, _ := http.NewRequest("GET", e.srv.URL+"/api/v1/jobs", nil)
	req.SetBasicAuth("admin", adminToken)
	r2, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != 401 {
		t.Fatalf("basic auth: %d", r2.StatusCode)
	}
	// The API ignores the dashboard's session cookie.
	req, _ = http.NewRequest("GET", e.srv.URL+"/api/v1/jobs", nil)
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: adminToken})
	r3, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r3.Body.Close()
	if r3.StatusCode != 401 {
		t.Fatalf("cookie on the API: %d", r3.StatusCode)
	}
}

func TestAuthOff(t *testing.T) {
	e := newEnv(t, NoAuth())
	e.expect("GET", "/api/v1/jobs", "", nil, 200, "")
	e.expect("POST", "/api/v1/jobs/"+e.ids.queued+"/cancel", "", nil, 200, "")
	e.expect("POST", "/api/v1/queues/mail/pause", "", nil, 200, "")
	// Tokens are ignored when auth is off.
	e.expect("GET", "/api/v1/queues", "anything", nil, 200, "")

	ro := newEnv(t, NoAuthReadOnly())
	ro.expect("GET", "/api/v1/jobs", "", nil, 200, "")
	ro.expect("POST", "/api/v1/jobs/"+ro.ids.queued+"/cancel", "", nil, 403, "forbidden")
}

func TestAuthVerifier(t *testing.T) {
	verify := func(r *http.Request) (Permission, error) {
		switch r.Header.Get("X-User") {
		case "alice":
			return PermAdmin, nil
		case "bob":
			return PermRead, nil
		case "mallory":
			return Permission(7), nil
		case "":
			return PermNone, errors.New("no user")
		}
		return PermNone, nil
	}
	e := newEnv(t, Verifier(verify))
	call := func(method, path, user string) int {
		req, _ := http.NewRequest(method, e.srv.URL+path, nil)
		if user != "" {
			req.Header.Set("X-User", user)
		}
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	cancel := "/api/v1/jobs/" + e.ids.queued + "/cancel"
	for _, c := range []struct {
		method, path, user string
		want               int
	}{
		{"GET", "/api/v1/jobs", "", 401},
		{"GET", "/api/v1/jobs", "eve", 401},
		{"GET", "/api/v1/jobs", "mallory", 401},
		{"GET", "/api/v1/jobs", "bob", 200},
		{"POST", cancel, "bob", 403},
		{"POST", cancel, "alice", 200},
		{"GET", "/", "", 401},
		{"GET", "/", "bob", 200},
	} {
		if got := call(c.method, c.path, c.user); got != c.want {
			t.Errorf("%s %s as %q: %d, want %d", c.method, c.path, c.user, got, c.want)
		}
	}
}

func TestTokenPermission(t *testing.T) {
	a := Tokens([]string{"r", "both"}, []string{"a", "both"})
	for tok, want := range map[string]Permission{"": PermNone, "r": PermRead, "a": PermAdmin, "both": PermAdmin, "x": PermNone, "rr": PermNone} {
		if got := a.tokenPermission(tok); got != want {
			t.Errorf("token %q: %v, want %v", tok, got, want)
		}
	}
	if PermNone.String() != "none" || PermRead.String() != "read" || PermAdmin.String() != "admin" {
		t.Error("Permission.String")
	}
}
