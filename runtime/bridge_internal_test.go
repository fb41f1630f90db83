package boson

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	"github.com/boson-go/boson/runtime/bridge"
)

// bridgeFixture is one claimed attempt with its bridge, outside any
// running worker: nothing renews or fences the lease behind the test's
// back, and a lost lease kills no process.
type bridgeFixture struct {
	t     testing.TB
	ctx   context.Context
	clock *core.ManualClock
	b     *mem.Backend
	a     *attempt
	s     *bridgeServer
	c     *bridge.Conn
}

func newBridgeFixture(t testing.TB) *bridgeFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	clock := core.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	b := mem.New(mem.Options{Clock: clock, Logger: quiet})
	t.Cleanup(func() { _ = b.Close() })
	w, err := NewWorker(b, WorkerOptions{ID: "w1", Clock: clock, Logger: quiet, LeaseTTL: time.Minute, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "default", Task: "render", Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	js, err := b.Claim(ctx, core.ClaimRequest{Queue: "default", WorkerID: "w1", Limit: 1, LeaseTTL: time.Minute})
	if err != nil || len(js) != 1 {
		t.Fatalf("claim: %v %v", js, err)
	}
	actx, acancel := context.WithCancelCause(ctx)
	t.Cleanup(func() { acancel(nil) })
	a := &attempt{w: w, b: b, job: js[0], lease: js[0].Lease, cancel: acancel}
	s, err := startBridge(actx, a, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	c, err := bridge.Dial(ctx, s.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &bridgeFixture{t: t, ctx: ctx, clock: clock, b: b, a: a, s: s, c: c}
}

// steal rescues the attempt's lease behind its back and lets another
// worker claim the job, as a rescue after a long pause would.
func (f *bridgeFixture) steal() core.Lease {
	f.t.Helper()
	f.clock.Advance(2 * time.Minute)
	if _, err := f.b.Rescue(f.ctx, core.RescueRequest{Limit: 10}); err != nil {
		f.t.Fatal(err)
	}
	js, err := f.b.Claim(f.ctx, core.ClaimRequest{Queue: "default", WorkerID: "w2", Limit: 1, LeaseTTL: time.Minute})
	if err != nil || len(js) != 1 {
		f.t.Fatalf("claim by w2: %v %v", js, err)
	}
	return js[0].Lease
}

func (f *bridgeFixture) checkpoints() map[string]string {
	f.t.Helper()
	cps, err := f.b.Checkpoints(f.ctx, f.a.job.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	m := map[string]string{}
	for _, c := range cps {
		m[c.Step] = string(c.Value)
	}
	return m
}

func TestBridgeSteps(t *testing.T) {
	f := newBridgeFixture(t)
	// A save as the first request (no read before it) commits too.
	resp, err := f.c.Do(f.ctx, bridge.Request{Op: bridge.OpStepSave, Name: "first", Value: json.RawMessage(`"x"`)})
	if err != nil || string(resp.Value) != `"x"` {
		t.Fatalf("a save first: %s %v", resp.Value, err)
	}
	ran := 0
	body := func(n int) func(context.Context) (int, error) {
		return func(context.Context) (int, error) { ran++; return n, nil }
	}
	v, err := bridge.Step(f.ctx, f.c, "fetch", body(7))
	if err != nil || v != 7 || ran != 1 {
		t.Fatalf("first run: %v %v ran=%d", v, err, ran)
	}
	// Replayed, not run again; a second save keeps the first value.
	if v, err := bridge.Step(f.ctx, f.c, "fetch", body(8)); err != nil || v != 7 || ran != 1 {
		t.Fatalf("replay: %v %v ran=%d", v, err, ran)
	}
	resp, err = f.c.Do(f.ctx, bridge.Request{Op: bridge.OpStepSave, Name: "fetch", Value: json.RawMessage(`9`)})
	if err != nil || string(resp.Value) != "7" {
		t.Fatalf("second save: %s %v", resp.Value, err)
	}
	// The checkpoint is the one an in-process step of the name reads.
	if got := f.checkpoints()["step-fetch"]; got != "7" {
		t.Fatalf("stored %q", got)
	}
	if exp, err := f.c.Heartbeat(f.ctx); err != nil || !exp.After(f.clock.Now()) {
		t.Fatalf("heartbeat: %v %v", exp, err)
	}
}

// TestBridgeLeaseLost: a child that writes after its attempt's lease was
// lost is refused with ErrLeaseLost, and nothing it wrote is stored.
func TestBridgeLeaseLost(t *testing.T) {
	f := newBridgeFixture(t)
	if _, err := bridge.Step(f.ctx, f.c, "one", func(context.Context) (int, error) { return 1, nil }); err != nil {
		t.Fatal(err)
	}
	f.steal()
	ran := false
	_, err := bridge.Step(f.ctx, f.c, "two", func(context.Context) (int, error) { ran = true; return 2, nil })
	if !errors.Is(err, core.ErrLeaseLost) {
		t.Fatalf("a write after the lease was lost: %v, want ErrLeaseLost", err)
	}
	var be *bridge.Error
	if !errors.As(err, &be) || be.Code != bridge.CodeLeaseLost {
		t.Fatalf("error %#v", err)
	}
	if !ran {
		t.Fatal("the body should have run: the worker did not know the lease was lost until the store refused the write")
	}
	if _, ok := f.checkpoints()["step-two"]; ok {
		t.Fatal("the stale attempt's checkpoint was stored")
	}
	if !f.a.lost.Load() {
		t.Fatal("the refused write did not mark the lease lost")
	}
	// Now that the worker knows, a miss does not run the body, a replay
	// still reads, and heartbeats and sleeps are refused.
	ran = false
	if _, err := bridge.Step(f.ctx, f.c, "three", func(context.Context) (int, error) { ran = true; return 3, nil }); !errors.Is(err, core.ErrLeaseLost) || ran {
		t.Fatalf("a step after the loss: %v, body ran: %v", err, ran)
	}
	if v, err := bridge.Step(f.ctx, f.c, "one", func(context.Context) (int, error) { return 0, errors.New("not run") }); err != nil || v != 1 {
		t.Fatalf("replay after the loss: %v %v", v, err)
	}
	if _, err := f.c.Heartbeat(f.ctx); !errors.Is(err, core.ErrLeaseLost) {
		t.Fatalf("heartbeat: %v", err)
	}
	if err := f.c.Sleep(f.ctx, "nap", time.Hour); !errors.Is(err, core.ErrLeaseLost) {
		t.Fatalf("sleep: %v", err)
	}
}

// TestBridgeHeartbeatFenced: a heartbeat proves ownership at the store.
func TestBridgeHeartbeatFenced(t *testing.T) {
	f := newBridgeFixture(t)
	f.steal()
	if _, err := f.c.Heartbeat(f.ctx); !errors.Is(err, core.ErrLeaseLost) {
		t.Fatalf("heartbeat of a stolen lease: %v", err)
	}
	if !f.a.lost.Load() {
		t.Fatal("the lease is not marked lost")
	}
}

func TestBridgeSleep(t *testing.T) {
	f := newBridgeFixture(t)
	if err := f.c.Sleep(f.ctx, "nap", 0); err != nil {
		t.Fatalf("a zero sleep: %v", err)
	}
	err := f.c.Sleep(f.ctx, "cool-off", time.Minute)
	if !errors.Is(err, bridge.ErrSuspended) {
		t.Fatalf("sleep: %v", err)
	}
	susp := f.s.suspended()
	if susp == nil || susp.Sleep != "cool-off" || !susp.Until.Equal(f.clock.Now().Add(time.Minute)) {
		t.Fatalf("suspension %+v", susp)
	}
	// Once suspending, nothing more is applied.
	if _, err := bridge.Step(f.ctx, f.c, "late", func(context.Context) (int, error) { return 1, nil }); err == nil || !strings.Contains(err.Error(), bridge.CodeSuspended) {
		t.Fatalf("a step after the suspension: %v", err)
	}
	if _, ok := f.checkpoints()["step-late"]; ok {
		t.Fatal("a step after the suspension was stored")
	}
}

func TestBridgeAwait(t *testing.T) {
	f := newBridgeFixture(t)
	res, err := f.b.Enqueue(f.ctx, []core.EnqueueRequest{{Queue: "children", Task: "child", Payload: []byte(`1`)}, {Queue: "default", Task: "child"}})
	if err != nil {
		t.Fatal(err)
	}
	child, same := res[0].Job.ID, res[1].Job.ID
	got := make(chan error, 1)
	var v map[string]int
	go func() {
		var err error
		v, err = bridge.Await[map[string]int](f.ctx, f.c, child)
		got <- err
	}()
	js, err := f.b.Claim(f.ctx, core.ClaimRequest{Queue: "children", WorkerID: "w9", Limit: 1, LeaseTTL: time.Minute})
	if err != nil || len(js) != 1 {
		t.Fatalf("%v %v", js, err)
	}
	if _, err := f.b.Complete(f.ctx, []core.Completion{{Lease: js[0].Lease, Result: []byte(`{"n":5}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil || v["n"] != 5 {
		t.Fatalf("await: %v %v", v, err)
	}
	if got := f.checkpoints()["await-"+child]; got != `{"n":5}` {
		t.Fatalf("await checkpoint %q", got)
	}
	if _, err := bridge.Await[int](f.ctx, f.c, same); !errors.Is(err, core.ErrInvalidArgument) || !bridge.IsPermanent(err) {
		t.Fatalf("await in the same queue: %v", err)
	}
	if _, err := bridge.Await[int](f.ctx, f.c, "01ARZ3NDEKTSV4RRFFQ69G5FAV"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("await of an unknown job: %v", err)
	}
}

// TestBridgeHostileLines: lines that are not valid requests get a clear
// error and leave the connection (and the worker) serving.
func TestBridgeHostileLines(t *testing.T) {
	f := newBridgeFixture(t)
	nc, err := net.Dial("unix", f.s.path)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	huge := `{"id":1,"op":"step.save","name":"x","value":"` + strings.Repeat("a", bridge.MaxLine) + `"}`
	for _, c := range []struct{ line, want string }{
		{"not json", "a request is a JSON object"},
		{"\x00\xff\xfe binary", "a request is a JSON object"},
		{`{"id":2}`, "op is missing"},
		{`{"id":3,"op":"rm -rf"}`, `unknown op \"rm -rf\"`},
		{`{"id":4,"op":"step.get","name":"../etc"}`, "only ASCII letters"},
		{`{"id":5,"op":"step.get"}`, "must not be empty"},
		{`{"id":6,"op":"step.save","name":"x","value":{"a":}}`, "not a request"},
		{`{"id":7,"op":"step.save","name":"x"}`, "value must be a JSON value"},
		{`{"id":8,"op":"sleep","name":"x","until":"tomorrow"}`, "not an RFC 3339 time"},
		{`{"id":9,"op":"sleep","name":"x","delay_ms":-5}`, "must be 0 to 100 years"},
		{`{"id":10,"op":"heartbeat","extra":1}`, "unknown field"},
		{`{"id":11,"op":"heartbeat"} {"id":12}`, "more than one JSON value"},
		{`{"id":13,"op":"await","job":""}`, "must not be empty"},
		{`{"id":14,"op":"step.save","name":"big","value":"` + strings.Repeat("b", 2<<20) + `"}`, "the limit is"},
		{huge, "longer than"},
		{"", "empty line"},
	} {
		if _, err := nc.Write([]byte(c.line + "\n")); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("%.40q: no answer: %v", c.line, err)
		}
		var resp bridge.Response
		if err := json.Unmarshal(line, &resp); err != nil {
			t.Fatalf("%.40q: unreadable answer %q", c.line, line)
		}
		if resp.OK || resp.Error == nil || resp.Error.Code != bridge.CodeInvalid || !strings.Contains(resp.Error.Message, strings.ReplaceAll(c.want, `\"`, `"`)) {
			t.Errorf("%.40q: answer %s, want an invalid error saying %q", c.line, line, c.want)
		}
	}
	// Still serving, on this connection and others.
	if _, err := nc.Write([]byte(`{"id":99,"op":"heartbeat"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadBytes('\n'); err != nil || !strings.Contains(string(line), `"id":99,"ok":true`) {
		t.Fatalf("after the hostile lines: %s %v", line, err)
	}
	if _, err := bridge.Step(f.ctx, f.c, "fine", func(context.Context) (int, error) { return 1, nil }); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.checkpoints()["step-big"]; ok {
		t.Fatal("an oversized value was stored")
	}
}

// TestBridgeConnectionBound: a child may hold a bounded number of
// connections; closing the bridge ends them and removes the socket.
func TestBridgeConnectionBound(t *testing.T) {
	f := newBridgeFixture(t)
	var conns []net.Conn
	for range maxBridgeConns + 1 {
		nc, err := net.Dial("unix", f.s.path)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		conns = append(conns, nc)
	}
	// The fixture's own connection holds one place: the last two dials
	// are over the bound.
	last := conns[len(conns)-1]
	line, err := bufio.NewReader(last).ReadBytes('\n')
	if err != nil || !strings.Contains(string(line), "at most") {
		t.Fatalf("over the bound: %q %v", line, err)
	}
	f.s.close()
	if _, err := os.Stat(f.s.dir); !os.IsNotExist(err) {
		t.Fatalf("the socket directory is left: %v", err)
	}
	if _, err := f.c.Heartbeat(f.ctx); err == nil {
		t.Fatal("a closed bridge answered")
	}
}

// FuzzBridgeRespond feeds arbitrary lines to a live bridge: it never
// panics, and every answer is one JSON line with an id.
func FuzzBridgeRespond(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"op":"step.get","name":"a"}`, `{"id":2,"op":"step.save","name":"a","value":[1,{"b":null}]}`,
		`{"id":3,"op":"sleep","name":"n","delay_ms":1000}`, `{"id":4,"op":"sleep","name":"n","until":"2026-01-01T00:00:00Z"}`,
		`{"id":5,"op":"await","job":"01ARZ3NDEKTSV4RRFFQ69G5FAV"}`, `{"id":6,"op":"heartbeat"}`, `{"op":"step.get","name":"` + strings.Repeat("z", 200) + `"}`,
		`{"id":18446744073709551615,"op":"heartbeat"}`, `{"id":-1}`, `[]`, `{}`, `null`, "{\"id\":1,\"op\":\"step.get\",\"name\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	fx := newBridgeFixture(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		resp := fx.s.respond(line)
		b, err := json.Marshal(resp)
		if err != nil {
			t.Fatalf("unencodable answer to %q: %v", line, err)
		}
		if !resp.OK && resp.Error == nil {
			t.Fatalf("neither ok nor an error: %s", b)
		}
	})
}
