package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

// env is a handler over a fresh in-memory backend with a manual clock.
type env struct {
	t     *testing.T
	clock *core.ManualClock
	be    *mem.Backend
	h     *Handler
	srv   *httptest.Server
	ids   fixtureIDs
}

// fixtureIDs names the jobs seed stores.
type fixtureIDs struct {
	queued, succeeded, failed, running, hostile string
}

var (
	readToken  = "read-token-0123456789"
	adminToken = "admin-token-0123456789"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newEnv(t *testing.T, auth Auth, mutate ...func(*Options)) *env {
	t.Helper()
	clock := core.NewManualClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	be := mem.New(mem.Options{Clock: clock})
	t.Cleanup(func() { _ = be.Close() })
	opts := Options{Backend: be, Auth: auth, Logger: quietLogger(), Clock: clock}
	for _, m := range mutate {
		m(&opts)
	}
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, clock: clock, be: be, h: h}
	e.ids = seed(t, be, clock)
	e.srv = httptest.NewServer(h)
	t.Cleanup(e.srv.Close)
	return e
}

// seed stores a queued job, a succeeded job with a checkpoint and a result,
// a failed job, a running job and a queued job with a hostile payload.
func seed(t *testing.T, be core.QueueBackend, clock *core.ManualClock) fixtureIDs {
	t.Helper()
	ctx := context.Background()
	enq := func(r core.EnqueueRequest) string {
		res, err := be.Enqueue(ctx, []core.EnqueueRequest{r})
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Millisecond)
		return res[0].Job.ID
	}
	claim := func(queue string) core.Job {
		js, err := be.Claim(ctx, core.ClaimRequest{Queue: queue, WorkerID: "w1", Limit: 1, LeaseTTL: time.Minute})
		if err != nil || len(js) != 1 {
			t.Fatalf("claim %s: %v %d", queue, err, len(js))
		}
		return js[0]
	}
	var ids fixtureIDs
	ids.succeeded = enq(core.EnqueueRequest{Queue: "mail", Task: "send_email", Payload: []byte(`{"to":"a@example.com"}`)})
	j := claim("mail")
	if _, err := be.SaveCheckpoint(ctx, j.Lease, "render", []byte(`{"html":"<b>hi</b>"}`)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if errs, err := be.Complete(ctx, []core.Completion{{Lease: j.Lease, Result: []byte(`{"sent":true}`)}}); err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	ids.failed = enq(core.EnqueueRequest{Queue: "mail", Task: "send_email", Payload: []byte(`{"to":"b@example.com"}`), MaxAttempts: 1})
	j = claim("mail")
	if _, err := be.Fail(ctx, core.Failure{Lease: j.Lease, Error: "smtp: connection refused", Terminal: true}); err != nil {
		t.Fatal(err)
	}
	ids.running = enq(core.EnqueueRequest{Queue: "reports", Task: "build_report", Payload: []byte(`{"month":"2026-01"}`)})
	claim("reports")
	ids.queued = enq(core.EnqueueRequest{Queue: "mail", Task: "send_email", Payload: []byte(`{"to":"c@example.com"}`), Headers: map[string]string{"trace": "abc"}})
	ids.hostile = enq(core.EnqueueRequest{Queue: "mail", Task: "send_email", Payload: []byte(`{"x":"</pre><script>alert(1)</script><img src=x onerror=alert(2)>"}`)})
	return ids
}

// do sends a request to the test server and decodes a JSON answer into out
// when out is not nil. It returns the response with its body read.
func (e *env) do(method, path, token string, body any, out any) (*http.Response, []byte) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	if out != nil {
		reflect.ValueOf(out).Elem().SetZero()
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s %s: decode %q: %v", method, path, data, err)
		}
	}
	return resp, data
}

// expect checks the status of a request and, for errors, the error code.
func (e *env) expect(method, path, token string, body any, status int, code string) []byte {
	e.t.Helper()
	var eb errorBody
	resp, data := e.do(method, path, token, body, nil)
	if resp.StatusCode != status {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, status, data)
	}
	if code != "" {
		if err := json.Unmarshal(data, &eb); err != nil || eb.Error.Code != code || eb.Error.Message == "" {
			e.t.Fatalf("%s %s: error body %s, want code %q", method, path, data, code)
		}
	}
	return data
}

func newTestServer(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// jsonEqual reports whether got and want hold the same JSON value.
func jsonEqual(got []byte, want string) bool {
	var a, b any
	if json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
