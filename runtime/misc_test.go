package boson_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

func TestBackoff(t *testing.T) {
	p := core.RetryPolicy{Initial: time.Second, Factor: 2, Max: 10 * time.Second}
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 5: 10 * time.Second, 60: 10 * time.Second} {
		got := boson.Backoff(p, attempt)
		if got > want || got < want-want/10 { // default jitter: up to 10% shorter
			t.Fatalf("attempt %d: %v, want about %v", attempt, got, want)
		}
	}
	if d := boson.Backoff(core.RetryPolicy{}, 1); d > 30*time.Second || d < 27*time.Second {
		t.Fatalf("default first delay %v", d)
	}
	if d := boson.Backoff(core.RetryPolicy{}, 100); d > time.Hour || d < 54*time.Minute {
		t.Fatalf("default cap %v", d)
	}
}

func TestPrimitivesOutsideATask(t *testing.T) {
	ctx := context.Background()
	if _, err := stepA.Run(ctx, func(context.Context) (int, error) { return 1, nil }); !errors.Is(err, boson.ErrNotInTask) {
		t.Fatalf("step: %v", err)
	}
	if err := boson.SleepFor(ctx, "x", time.Second); !errors.Is(err, boson.ErrNotInTask) {
		t.Fatalf("sleep: %v", err)
	}
	if _, err := boson.Await[int](ctx, nil); !errors.Is(err, boson.ErrNotInTask) {
		t.Fatalf("await: %v", err)
	}
	if _, ok := boson.Info(ctx); ok {
		t.Fatal("info outside a task")
	}
}

var echoLate = boson.NewTask[int, int]("late")

func TestWorkerValidation(t *testing.T) {
	e := newEnv(t)
	for name, o := range map[string]boson.WorkerOptions{
		"bad queue":     {Queues: []string{"a.b"}},
		"dup queue":     {Queues: []string{"a", "a"}},
		"neg conc":      {Concurrency: -1},
		"slow beat":     {LeaseTTL: time.Second, HeartbeatInterval: time.Second},
		"bad id":        {ID: "has space"},
		"bad retry":     {DefaultRetry: core.RetryPolicy{Factor: 0.5}},
		"neg intervals": {PollInterval: -time.Second},
	} {
		if _, err := boson.NewWorker(e.b, o); !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if _, err := boson.NewWorker(nil, boson.WorkerOptions{}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("nil backend: %v", err)
	}
	if _, err := boson.NewClient(nil, boson.ClientOptions{}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("nil client backend: %v", err)
	}
	w := e.worker(nil)
	if err := boson.Register(w, boson.NewTask[int, int]("bad name"), func(context.Context, int) (int, error) { return 0, nil }); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("bad task name: %v", err)
	}
	if err := boson.Register[int, int](w, childTask, nil); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("nil handler: %v", err)
	}
	if err := boson.Register(w, childTask, func(context.Context, int) (int, error) { return 0, nil }, boson.AttemptTimeout(-1)); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("negative timeout: %v", err)
	}
	if err := boson.Register(w, childTask, func(context.Context, int) (int, error) { return 0, nil }); err != nil {
		t.Fatal(err)
	}
	if err := boson.Register(w, childTask, func(context.Context, int) (int, error) { return 0, nil }); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("registered twice: %v", err)
	}
	e.start(w)
	if err := boson.Register(w, echoLate, func(context.Context, int) (int, error) { return 0, nil }); !errors.Is(err, core.ErrInvalidState) {
		t.Fatalf("register after start: %v", err)
	}
}

func TestInvalidStepNameFailsPermanently(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(nil)
	bad := boson.NewStep[int]("no spaces allowed")
	_ = boson.Register(w, childTask, func(ctx context.Context, n int) (int, error) {
		return bad.Run(ctx, func(context.Context) (int, error) { return n, nil })
	})
	e.start(w)
	h, _ := boson.Spawn(ctx, e.client, childTask, 1)
	if _, err := h.Wait(ctx); !errors.Is(err, boson.ErrTaskFailed) {
		t.Fatalf("wait: %v", err)
	}
	if j := e.job(h.ID()); j.Attempt != 1 {
		t.Fatalf("retried: %+v", j)
	}
}

func TestTaskConfigCacheRefreshedByClient(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	h1, _ := boson.Spawn(ctx, e.client, childTask, 1) // caches "no config"
	if err := e.client.PutTaskConfig(ctx, core.TaskConfig{Task: "child", Priority: 9}); err != nil {
		t.Fatal(err)
	}
	h2, _ := boson.Spawn(ctx, e.client, childTask, 1)
	if e.job(h1.ID()).Priority != 0 || e.job(h2.ID()).Priority != 9 {
		t.Fatalf("priorities %d %d", e.job(h1.ID()).Priority, e.job(h2.ID()).Priority)
	}
}
