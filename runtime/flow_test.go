package boson_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// plainBackend is a real store seen through the bare QueueBackend
// interface: it does not implement core.FlowController.
type plainBackend struct{ core.QueueBackend }

type tenantIn struct {
	Tenant string            `json:"tenant"`
	N      int               `json:"n"`
	Tags   map[string]string `json:"tags,omitempty"`
}

var tenantTask = boson.NewTask[tenantIn, struct{}]("tenant-work")

func countAll(t *testing.T, b core.QueueBackend) int64 {
	t.Helper()
	counts, err := b.CountJobs(context.Background(), core.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, c := range counts {
		n += c
	}
	return n
}

func TestFlowSpawnRefusedWithoutFlowController(t *testing.T) {
	e := newEnv(t)
	plain := plainBackend{e.b}
	c, err := boson.NewClient(plain, boson.ClientOptions{Clock: e.clock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	in := tenantIn{Tenant: "acme", N: 1}
	for name, opts := range map[string][]boson.SpawnOption{
		"limit key":         {boson.WithLimitKey("acme")},
		"sequence key":      {boson.WithSequenceKey("acme")},
		"while active":      {boson.WithIdempotencyKey("k"), boson.WithUnique(core.UniqueWhileActive)},
		"by period":         {boson.WithIdempotencyKey("k"), boson.WithUniquePeriod(time.Hour)},
		"args while active": {boson.WithUniqueArgs(), boson.WithUnique(core.UniqueWhileActive)},
	} {
		_, err := boson.Spawn(ctx, c, tenantTask, in, opts...)
		if !errors.Is(err, boson.ErrFlowUnsupported) || !errors.Is(err, core.ErrUnsupported) {
			t.Errorf("%s: err = %v, want ErrFlowUnsupported wrapping core.ErrUnsupported", name, err)
		}
	}
	// One flow request in a batch refuses the whole batch.
	_, err = c.SpawnRequests(ctx, tenantTask.Request(in), tenantTask.Request(in, boson.WithLimitKey("acme")))
	var be *core.BatchError
	if !errors.Is(err, boson.ErrFlowUnsupported) || !errors.As(err, &be) || be.Index != 1 {
		t.Errorf("batch: err = %v, want ErrFlowUnsupported at index 1", err)
	}
	if n := countAll(t, e.b); n != 0 {
		t.Fatalf("%d jobs stored by refused spawns, want 0", n)
	}
	// Without flow fields the plain backend serves as before.
	if _, err := boson.Spawn(ctx, c, tenantTask, in); err != nil {
		t.Fatal(err)
	}
}

func TestFlowSpawnOptionsValidated(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	in := tenantIn{Tenant: "acme"}
	for name, opts := range map[string][]boson.SpawnOption{
		"bad limit key":          {boson.WithLimitKey("has space")},
		"long sequence key":      {boson.WithSequenceKey(strings.Repeat("s", 300))},
		"mode without key":       {boson.WithUnique(core.UniqueWhileActive)},
		"unknown mode":           {boson.WithIdempotencyKey("k"), boson.WithUnique("forever")},
		"period too short":       {boson.WithIdempotencyKey("k"), boson.WithUniquePeriod(time.Millisecond)},
		"period too long":        {boson.WithIdempotencyKey("k"), boson.WithUniquePeriod(400 * 24 * time.Hour)},
		"by period, no period":   {boson.WithIdempotencyKey("k"), boson.WithUnique(core.UniqueByPeriod)},
		"args and explicit key":  {boson.WithUniqueArgs(), boson.WithIdempotencyKey("k")},
		"explicit key then args": {boson.WithIdempotencyKey("k"), boson.WithUniqueArgs()},
	} {
		_, err := boson.Spawn(ctx, e.client, tenantTask, in, opts...)
		if !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want core.ErrInvalidArgument", name, err)
		}
	}
	if n := countAll(t, e.b); n != 0 {
		t.Fatalf("%d jobs stored by invalid spawns, want 0", n)
	}
}

func TestUniqueArgsUntilRetention(t *testing.T) {
	// The default mode needs no flow control: it works on any backend.
	e := newEnv(t)
	c, err := boson.NewClient(plainBackend{e.b}, boson.ClientOptions{Clock: e.clock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := boson.Spawn(ctx, c, tenantTask, tenantIn{Tenant: "acme", N: 1, Tags: map[string]string{"b": "2", "a": "1"}}, boson.WithUniqueArgs())
	if err != nil {
		t.Fatal(err)
	}
	b, err := boson.Spawn(ctx, c, tenantTask, tenantIn{Tenant: "acme", N: 1, Tags: map[string]string{"a": "1", "b": "2"}}, boson.WithUniqueArgs())
	if err != nil {
		t.Fatal(err)
	}
	if !b.Reused() || b.ID() != a.ID() {
		t.Fatalf("equal args: second spawn reused=%v id=%s, want the first job %s", b.Reused(), b.ID(), a.ID())
	}
	other, err := boson.Spawn(ctx, c, tenantTask, tenantIn{Tenant: "acme", N: 2}, boson.WithUniqueArgs())
	if err != nil {
		t.Fatal(err)
	}
	if other.Reused() || other.ID() == a.ID() {
		t.Fatal("different args reused the first job")
	}
	j, err := a.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const canon = `{"n":1,"tags":{"a":"1","b":"2"},"tenant":"acme"}`
	if string(j.Payload) != canon {
		t.Errorf("stored input %s, want the canonical %s", j.Payload, canon)
	}
	want, err := boson.UniqueArgsKey(tenantTask.Name(), []byte(` { "tenant" : "acme", "tags": {"b":"2","a":"1"}, "n": 1 } `))
	if err != nil {
		t.Fatal(err)
	}
	if j.IdempotencyKey != want {
		t.Errorf("key %q, want UniqueArgsKey %q", j.IdempotencyKey, want)
	}
	// Another task with the same input has another key.
	other2 := boson.NewTask[tenantIn, struct{}]("tenant-other")
	o, err := boson.Spawn(ctx, c, other2, tenantIn{Tenant: "acme", N: 1, Tags: map[string]string{"a": "1", "b": "2"}}, boson.WithUniqueArgs())
	if err != nil {
		t.Fatal(err)
	}
	if oj, _ := o.Snapshot(ctx); oj.IdempotencyKey == j.IdempotencyKey {
		t.Error("two tasks with equal input share a key")
	}
}

func TestUniqueArgsKeyIsStable(t *testing.T) {
	// The derivation is part of the contract: this value must never change.
	got, err := boson.UniqueArgsKey("send-email", []byte(`{"to":"a@example.com","n":[1,2.50,{"z":null,"y":true}],"s":"\u00e9\n<"}`))
	if err != nil {
		t.Fatal(err)
	}
	const want = "args:" + uniqueArgsGolden
	if got != want {
		t.Fatalf("UniqueArgsKey = %s, want %s", got, want)
	}
}

func TestCanonicalJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"b":1, "a" : [true,false,null]}`, `{"a":[true,false,null],"b":1}`},
		{` 1.50 `, `1.50`},
		{`-0`, `-0`},
		{`12345678901234567890123`, `12345678901234567890123`},
		{`"\u00e9\u0001\t\"\\\/<>&"`, "\"\u00e9\\u0001\\t\\\"\\\\/<>&\""},
		{`{"k":1,"k":2}`, `{"k":2}`},
		{`{"é":1,"z":2,"A":3}`, `{"A":3,"z":2,"é":1}`},
		{`[]`, `[]`},
		{`{}`, `{}`},
	} {
		got, err := boson.CanonicalJSON([]byte(c.in))
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("CanonicalJSON(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	for _, bad := range []string{``, `{`, `1 2`, `{"a":1}x`, "\"\xff\"", `nul`} {
		if _, err := boson.CanonicalJSON([]byte(bad)); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("CanonicalJSON(%q) err = %v, want core.ErrInvalidArgument", bad, err)
		}
	}
}

func TestFlowConfigRefusedWithoutFlowController(t *testing.T) {
	e := newEnv(t)
	plain := plainBackend{e.b}
	c, err := boson.NewClient(plain, boson.ClientOptions{Clock: e.clock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, cfg := range []core.TaskConfig{
		{Task: "t", MaxRunning: 1},
		{Task: "t", MaxRunningPerKey: 1},
		{Task: "t", MaxStartsPerSecond: 1},
		{Task: "t", MaxStartsPerSecondPerKey: 1},
		{Task: "t", HoldSequenceOnFailure: true},
	} {
		if err := c.PutTaskConfig(ctx, cfg); !errors.Is(err, boson.ErrFlowUnsupported) {
			t.Errorf("PutTaskConfig(%+v) err = %v, want ErrFlowUnsupported", cfg, err)
		}
	}
	if err := c.SetFlowLimits(ctx, "t", boson.FlowLimits{MaxRunningPerKey: 2}); !errors.Is(err, core.ErrUnsupported) {
		t.Errorf("SetFlowLimits err = %v, want core.ErrUnsupported", err)
	}
	if _, err := e.b.GetTaskConfig(ctx, "t"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("a refused config was stored: err = %v", err)
	}
	if err := c.PutQueueConfig(ctx, core.QueueConfig{Queue: "q", MaxRunning: 3}); !errors.Is(err, boson.ErrFlowUnsupported) {
		t.Errorf("PutQueueConfig err = %v, want ErrFlowUnsupported", err)
	}
	if qc, err := e.b.GetQueueConfig(ctx, "q"); err != nil || qc.MaxRunning != 0 {
		t.Errorf("refused queue config: %+v, %v", qc, err)
	}
	// Configs without flow limits are stored as before.
	if err := c.PutTaskConfig(ctx, core.TaskConfig{Task: "t", Priority: 3}); err != nil {
		t.Fatal(err)
	}
	// Zero limits ask for nothing the backend lacks.
	if err := c.SetFlowLimits(ctx, "t", boson.FlowLimits{}); err != nil {
		t.Fatal(err)
	}

	w, err := boson.NewWorker(plain, boson.WorkerOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	err = boson.Register(w, tenantTask, func(context.Context, tenantIn) (struct{}, error) { return struct{}{}, nil },
		boson.WithFlowLimits(boson.FlowLimits{MaxRunning: 4}))
	if !errors.Is(err, boson.ErrFlowUnsupported) {
		t.Fatalf("Register err = %v, want ErrFlowUnsupported", err)
	}
}

func TestFlowLimitsValidated(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, l := range []boson.FlowLimits{
		{MaxRunning: -1},
		{MaxRunningPerKey: core.MaxFlowLimit + 1},
		{MaxStartsPerSecond: -5},
		{MaxStartsPerSecondPerKey: -1},
	} {
		if err := l.Validate(); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("%+v: Validate err = %v", l, err)
		}
		if err := e.client.SetFlowLimits(ctx, "t", l); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("%+v: SetFlowLimits err = %v", l, err)
		}
		w := e.worker(nil)
		if err := boson.Register(w, tenantTask, func(context.Context, tenantIn) (struct{}, error) { return struct{}{}, nil },
			boson.WithFlowLimits(l)); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("%+v: Register err = %v", l, err)
		}
	}
	if err := e.client.SetFlowLimits(ctx, "bad name", boson.FlowLimits{}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("SetFlowLimits with a bad task name: err = %v", err)
	}
}

// uniqueArgsGolden is SHA-256("boson-unique-args-v1\x00send-email\x00" +
// `{"n":[1,2.50,{"y":true,"z":null}],"s":"é\n<","to":"a@example.com"}`),
// computed outside Go.
const uniqueArgsGolden = "d855b934f0740f7593e3523571ede115e8e27d147cbcb115aaf69daebd1c2eb6"
