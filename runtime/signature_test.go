package boson_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

func sigOf[In any]() string { return boson.NewTask[In, int]("t").Signature() }

type (
	point     struct{ X, Y int }
	samePoint struct{ X, Y int }
	swapped   struct{ Y, X int }
	renamed   struct{ X, Z int }
	retyped   struct {
		X int64
		Y int
	}
	tagged struct {
		X int `json:"x"`
		Y int
	}
	retagged struct {
		X int `json:"x,omitempty"`
		Y int
	}
	withPrivate struct {
		X, Y    int
		private string
		Ignored string `json:"-"`
	}

	list     struct{ Next *list }
	sameList struct{ Next *sameList }
	chain    struct{ Next *struct{ Next *list } }
	tree     struct{ Kids []tree }
	forest   struct{ Kids map[string]tree }
	mutualA  struct{ B *mutualB }
	mutualB  struct{ A *mutualA }

	inner       struct{ N int }
	innerWider  struct{ N, M int }
	embeds      struct{ inner }
	embedsWider struct{ innerWider }
	embedsPtr   struct{ *inner }
	names       struct{ Inner inner }
	stamped     struct{ At time.Time }
	unstamped   struct{ At struct{} }
)

var _ = withPrivate{}.private

func TestShapeSignatures(t *testing.T) {
	same := [][2]string{
		{sigOf[point](), sigOf[samePoint]()},
		{sigOf[point](), sigOf[swapped]()},     // field order does not matter to JSON
		{sigOf[point](), sigOf[withPrivate]()}, // nor do fields JSON never sees
		{sigOf[list](), sigOf[sameList]()},     // recursive types by shape, not name
		{sigOf[point](), boson.NewTask[point, string]("other").Signature()},
	}
	for i, p := range same {
		if p[0] != p[1] {
			t.Errorf("pair %d: %s != %s", i, p[0], p[1])
		}
	}
	distinct := map[string]string{}
	for name, s := range map[string]string{
		"point": sigOf[point](), "renamed": sigOf[renamed](), "retyped": sigOf[retyped](),
		"tagged": sigOf[tagged](), "retagged": sigOf[retagged](),
		"list": sigOf[list](), "chain": sigOf[chain](), "tree": sigOf[tree](), "forest": sigOf[forest](),
		"mutualA": sigOf[mutualA](), "mutualB*": sigOf[*mutualB](),
		"embeds": sigOf[embeds](), "embedsWider": sigOf[embedsWider](), "embedsPtr": sigOf[embedsPtr](), "names": sigOf[names](),
		"stamped": sigOf[stamped](), "unstamped": sigOf[unstamped](),
		"int": sigOf[int](), "int64": sigOf[int64](), "*int": sigOf[*int](), "**int": sigOf[**int](),
		"[]int": sigOf[[]int](), "[3]int": sigOf[[3]int](), "[4]int": sigOf[[4]int](), "[]byte": sigOf[[]byte](),
		"map[string]int": sigOf[map[string]int](), "map[int]int": sigOf[map[int]int](), "map[string]int64": sigOf[map[string]int64](),
		"string": sigOf[string](), "any": sigOf[any](),
	} {
		if !strings.HasPrefix(s, "shape:") || len(s) != len("shape:")+16 {
			t.Errorf("%s: malformed signature %q", name, s)
		}
		if other, dup := distinct[s]; dup {
			t.Errorf("%s and %s share signature %s", name, other, s)
		}
		distinct[s] = name
	}
}

func TestVersionSignature(t *testing.T) {
	a := boson.NewTask[point, int]("t", boson.Version("v2"))
	b := boson.NewTask[renamed, string]("t", boson.Version("v2"))
	if a.Signature() != "version:v2" || b.Signature() != a.Signature() {
		t.Fatalf("signatures %q %q", a.Signature(), b.Signature())
	}
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	ctx := ctxT(t)
	for _, v := range []string{"", "has space", "naïve", strings.Repeat("v", boson.MaxVersionLength+1)} {
		bad := boson.NewTask[int, int]("t", boson.Version(v))
		if err := bad.Validate(); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("version %q: validate %v", v, err)
		}
		if _, err := boson.Spawn(ctx, e.client, bad, 1); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("version %q: spawn %v", v, err)
		}
		if err := boson.Register(e.worker(nil), bad, echoInt); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("version %q: register %v", v, err)
		}
	}
}

func echoInt(_ context.Context, n int) (int, error) { return n, nil }

func TestSignatureHeader(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	task := boson.NewTask[point, int]("sig")
	h, err := boson.Spawn(ctx, e.client, task, point{1, 2}, boson.WithHeader("tenant", "t1"))
	if err != nil {
		t.Fatal(err)
	}
	if j := e.job(h.ID()); j.Headers[boson.SignatureHeader] != task.Signature() || j.Headers["tenant"] != "t1" || len(j.Headers) != 2 {
		t.Fatalf("headers %v", j.Headers)
	}
	for _, k := range []string{boson.SignatureHeader, "boson-anything", "Boson-Signature", "BOSON-x"} {
		_, err := boson.Spawn(ctx, e.client, task, point{}, boson.WithHeader(k, "forged"))
		if !errors.Is(err, core.ErrInvalidArgument) || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("header %q: %v", k, err)
		}
	}
	if _, err := boson.Spawn(ctx, e.client, task, point{}, boson.WithHeader("bosonx", "fine")); err != nil {
		t.Errorf("a key without the prefix: %v", err)
	}
}

// The signature is part of the idempotency fingerprint: a task whose
// signature changed conflicts with the job spawned under the old one.
func TestSignatureIdempotency(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	v1 := boson.NewTask[int, int]("idem", boson.Version("1"))
	h, err := boson.Spawn(ctx, e.client, v1, 7, boson.WithIdempotencyKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	// The same payload bytes and version, other Go types: reused.
	h2, err := boson.Spawn(ctx, e.client, boson.NewTask[int64, string]("idem", boson.Version("1")), 7, boson.WithIdempotencyKey("k"))
	if err != nil || !h2.Reused() || h2.ID() != h.ID() {
		t.Fatalf("same signature: %v", err)
	}
	// The same payload bytes under another signature: a conflict.
	for _, other := range []boson.Task[int, int]{
		boson.NewTask[int, int]("idem", boson.Version("2")),
		boson.NewTask[int, int]("idem"),
	} {
		if _, err := boson.Spawn(ctx, e.client, other, 7, boson.WithIdempotencyKey("k")); !errors.Is(err, core.ErrIdempotencyConflict) {
			t.Fatalf("signature %s: %v", other.Signature(), err)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var (
	oldShape = boson.NewTask[string, int]("typed")
	newShape = boson.NewTask[point, int]("typed")
)

// countingPoint is a handler of newShape that counts its calls.
func countingPoint(calls *atomic.Int32) func(context.Context, point) (int, error) {
	return func(_ context.Context, p point) (int, error) {
		calls.Add(1)
		return p.X + p.Y, nil
	}
}

func TestSignatureFail(t *testing.T) {
	for name, mod := range map[string]struct {
		opts func(*boson.WorkerOptions)
		reg  []boson.HandlerOption
	}{
		"worker option": {opts: func(o *boson.WorkerOptions) { o.SignatureMismatch = boson.SignatureFail }},
		"handler option": {
			opts: func(o *boson.WorkerOptions) { o.SignatureMismatch = boson.SignatureWait },
			reg:  []boson.HandlerOption{boson.OnSignatureMismatch(boson.SignatureFail)},
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			ctx := ctxT(t)
			w := e.worker(mod.opts)
			var calls atomic.Int32
			if err := boson.Register(w, newShape, countingPoint(&calls), mod.reg...); err != nil {
				t.Fatal(err)
			}
			e.start(w)
			// Valid JSON for the new type too: only the signature stops it.
			h, err := boson.Spawn(ctx, e.client, boson.NewTask[map[string]int, int]("typed"), map[string]int{"X": 1})
			if err != nil {
				t.Fatal(err)
			}
			_, err = h.Wait(ctx)
			var te *boson.TaskError
			if !errors.As(err, &te) || te.State != core.StateFailed {
				t.Fatalf("wait: %v", err)
			}
			for _, want := range []string{"signature mismatch", "typed", sigOf[map[string]int](), newShape.Signature()} {
				if !strings.Contains(te.Message, want) {
					t.Errorf("error %q does not name %q", te.Message, want)
				}
			}
			if j := e.job(h.ID()); j.Attempt != 1 || calls.Load() != 0 {
				t.Fatalf("attempt %d, handler calls %d", j.Attempt, calls.Load())
			}
		})
	}
}

func TestSignatureWait(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	var logs syncBuffer
	old := e.worker(func(o *boson.WorkerOptions) {
		o.ID = "old-build"
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	var oldCalls atomic.Int32
	if err := boson.Register(old, oldShape, func(_ context.Context, s string) (int, error) {
		oldCalls.Add(1)
		return len(s), nil
	}); err != nil {
		t.Fatal(err)
	}
	e.start(old)
	start := e.clock.Now()
	h, err := boson.Spawn(ctx, e.client, newShape, point{3, 4})
	if err != nil {
		t.Fatal(err)
	}
	// Refused and released: sleeping for one second, one attempt, no lease.
	j := e.waitState(h.ID(), core.StateSleeping)
	if j.Attempt != 1 || !j.RunAt.Equal(start.Add(time.Second)) {
		t.Fatalf("after the first refusal: %+v", j)
	}
	// Refused again when it wakes, with a longer sleep and still one attempt.
	e.clock.Advance(time.Second)
	eventually(t, "the second refusal", func() bool {
		j = e.job(h.ID())
		return j.State == core.StateSleeping && j.RunAt.Equal(start.Add(3*time.Second))
	})
	if j.Attempt != 1 || oldCalls.Load() != 0 {
		t.Fatalf("after the second refusal: attempt %d, old handler calls %d", j.Attempt, oldCalls.Load())
	}
	// One warning for both refusals, naming both signatures.
	if got := strings.Count(logs.String(), "left for a worker"); got != 1 {
		t.Errorf("%d warnings, want 1:\n%s", got, logs.String())
	}
	for _, want := range []string{oldShape.Signature(), newShape.Signature(), "level=WARN"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log does not hold %q:\n%s", want, logs.String())
		}
	}
	if err := old.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// A worker of the new build takes it when it wakes.
	fresh := e.worker(func(o *boson.WorkerOptions) { o.ID = "new-build" })
	var calls atomic.Int32
	if err := boson.Register(fresh, newShape, countingPoint(&calls)); err != nil {
		t.Fatal(err)
	}
	e.start(fresh)
	e.clock.Advance(2 * time.Second)
	if out, err := h.Wait(ctx); err != nil || out != 7 {
		t.Fatalf("wait: %v %v", out, err)
	}
	if j := e.job(h.ID()); j.Attempt != 1 || calls.Load() != 1 {
		t.Fatalf("attempt %d, calls %d", j.Attempt, calls.Load())
	}
	runs, err := e.b.ListRuns(ctx, h.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || runs[0].Status != core.RunSleeping || runs[1].Status != core.RunSleeping || runs[2].Status != core.RunSucceeded || runs[2].WorkerID != "new-build" {
		t.Fatalf("runs %+v", runs)
	}
}

// Jobs without a signature (older producers, other languages, the admin
// API) run on any worker, and AcceptSignatures admits older signatures.
func TestSignatureUnsignedAndAccepted(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(func(o *boson.WorkerOptions) { o.SignatureMismatch = boson.SignatureFail })
	var calls atomic.Int32
	if err := boson.Register(w, newShape, countingPoint(&calls), boson.AcceptSignatures(sigOf[samePoint](), "version:legacy")); err != nil {
		t.Fatal(err)
	}
	e.start(w)
	res, err := e.b.Enqueue(ctx, []core.EnqueueRequest{{Queue: core.DefaultQueue, Task: "typed", Payload: []byte(`{"X":1,"Y":1}`)}})
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := boson.Spawn(ctx, e.client, boson.NewTask[point, int]("typed", boson.Version("legacy")), point{2, 2})
	if err != nil {
		t.Fatal(err)
	}
	if j := e.waitState(res[0].Job.ID, core.StateSucceeded); string(j.Result) != "2" {
		t.Fatalf("unsigned job: %+v", j)
	}
	if out, err := legacy.Wait(ctx); err != nil || out != 4 {
		t.Fatalf("accepted signature: %v %v", out, err)
	}
}

func TestSignatureExecutor(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(func(o *boson.WorkerOptions) { o.SignatureMismatch = boson.SignatureFail })
	var ran atomic.Int32
	run := boson.ExecuteFunc(func(context.Context, *boson.Execution) ([]byte, error) {
		ran.Add(1)
		return []byte("1"), nil
	})
	// An executor without AcceptSignatures runs every job; with it, it
	// checks them like a typed handler.
	if err := w.RegisterExecutor("any-shape", run); err != nil {
		t.Fatal(err)
	}
	if err := w.RegisterExecutor("checked", run, boson.AcceptSignatures(sigOf[point]())); err != nil {
		t.Fatal(err)
	}
	e.start(w)
	a, err := boson.Spawn(ctx, e.client, boson.NewTask[string, int]("any-shape"), "x")
	if err != nil {
		t.Fatal(err)
	}
	b, err := boson.Spawn(ctx, e.client, boson.NewTask[string, int]("checked"), "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Wait(ctx); !errors.Is(err, boson.ErrTaskFailed) {
		t.Fatalf("checked executor: %v", err)
	}
	if ran.Load() != 1 {
		t.Fatalf("executor ran %d times", ran.Load())
	}
}

func TestSignaturePolicyValidation(t *testing.T) {
	e := newEnv(t)
	if _, err := boson.NewWorker(e.b, boson.WorkerOptions{SignatureMismatch: 7}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("worker option: %v", err)
	}
	if err := boson.Register(e.worker(nil), newShape, countingPoint(new(atomic.Int32)), boson.OnSignatureMismatch(9)); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("handler option: %v", err)
	}
	if err := e.worker(nil).RegisterExecutor("x", boson.ExecuteFunc(nil), boson.AcceptSignatures("")); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("empty accepted signature: %v", err)
	}
	for p, want := range map[boson.SignaturePolicy]string{0: "default", boson.SignatureWait: "wait", boson.SignatureFail: "fail", 5: "SignaturePolicy(5)"} {
		if p.String() != want {
			t.Errorf("%d: %s", int(p), p)
		}
	}
}
