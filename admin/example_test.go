package admin_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/boson-go/boson/admin"
	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

// Mount the admin handler under /admin/ beside an application's own routes,
// with a read-only token for dashboards and an admin token for operators.
func Example() {
	backend := mem.New(mem.Options{})
	defer backend.Close()
	_, _ = backend.Enqueue(context.Background(), []core.EnqueueRequest{{Queue: "mail", Task: "send_email", Payload: []byte(`{"to":"a@example.com"}`)}})

	h, err := admin.New(admin.Options{
		Backend: backend,
		Auth:    admin.Tokens([]string{"read-secret"}, []string{"admin-secret"}),
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", h))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	call := func(method, path, token string) {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Println(method, path, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	call("GET", "/admin/api/v1/queues", "")
	call("GET", "/admin/api/v1/queues", "read-secret")
	call("POST", "/admin/api/v1/queues/mail/pause", "read-secret")
	call("POST", "/admin/api/v1/queues/mail/pause", "admin-secret")
	// Output:
	// GET /admin/api/v1/queues 401 {"error":{"code":"unauthorized","message":"authentication required"}}
	// GET /admin/api/v1/queues 200 {"queues":[{"queue":"mail","jobs":{"queued":1},"paused":false}]}
	// POST /admin/api/v1/queues/mail/pause 403 {"error":{"code":"forbidden","message":"this needs the admin permission"}}
	// POST /admin/api/v1/queues/mail/pause 200 {"queue":"mail","jobs":{"queued":1},"paused":true}
}

// Turning authentication off is an explicit choice; NoAuthReadOnly keeps
// every mutating endpoint closed.
func ExampleNoAuthReadOnly() {
	backend := mem.New(mem.Options{})
	defer backend.Close()
	h, _ := admin.New(admin.Options{Backend: backend, Auth: admin.NoAuthReadOnly()})
	for _, r := range []*http.Request{
		httptest.NewRequest("GET", "/api/v1/jobs", nil),
		httptest.NewRequest("POST", "/api/v1/queues/mail/pause", nil),
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		fmt.Println(r.Method, r.URL.Path, rec.Code)
	}
	// Output:
	// GET /api/v1/jobs 200
	// POST /api/v1/queues/mail/pause 403
}

// A verifier decides permissions from the request, for example from a
// header that an authenticating proxy sets.
func ExampleVerifier() {
	auth := admin.Verifier(func(r *http.Request) (admin.Permission, error) {
		switch r.Header.Get("X-Forwarded-Groups") {
		case "ops":
			return admin.PermAdmin, nil
		case "dev":
			return admin.PermRead, nil
		}
		return admin.PermNone, nil
	})
	backend := mem.New(mem.Options{})
	defer backend.Close()
	h, _ := admin.New(admin.Options{Backend: backend, Auth: auth})
	for _, group := range []string{"", "dev", "ops"} {
		r := httptest.NewRequest("POST", "/api/v1/queues/mail/pause", nil)
		r.Header.Set("X-Forwarded-Groups", group)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		fmt.Printf("%q %d\n", group, rec.Code)
	}
	// Output:
	// "" 401
	// "dev" 403
	// "ops" 200
}
