package boson_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
	"github.com/boson-go/boson/runtime/bridge"
)

// bridgeChildEnv makes the test binary act as the subprocess of an
// attempt with the executor bridge.
const bridgeChildEnv = "BOSON_TEST_BRIDGE_CHILD"

type bridgeIn struct {
	Ledger string // a file the child appends one line to per step body run
	Child  string // a job to await
}

type bridgeOut struct {
	One, Two, Child int
	RunID           string
}

// bridgeChild is the subprocess: two steps, killed by SIGKILL after the
// first on attempt 1, then a heartbeat, a durable sleep and an await.
func bridgeChild() int {
	return bridge.Run(context.Background(), os.Stdin, os.Stdout, os.Stderr, func(ctx context.Context, c *bridge.Conn, in bridgeIn) (bridgeOut, error) {
		info := c.Info()
		record := func(what string) error {
			f, err := os.OpenFile(in.Ledger, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = fmt.Fprintf(f, "%s attempt %d\n", what, info.Attempt)
			return err
		}
		one, err := bridge.Step(ctx, c, "one", func(context.Context) (int, error) { return 1, record("one") })
		if err != nil {
			return bridgeOut{}, err
		}
		if info.Attempt == 1 {
			p, _ := os.FindProcess(os.Getpid())
			_ = p.Kill() // SIGKILL: no cleanup, no exit status of our choosing
			select {}
		}
		two, err := bridge.Step(ctx, c, "two", func(context.Context) (int, error) { return 2, record("two") })
		if err != nil {
			return bridgeOut{}, err
		}
		if _, err := c.Heartbeat(ctx); err != nil {
			return bridgeOut{}, err
		}
		if err := c.Sleep(ctx, "nap", time.Minute); err != nil {
			return bridgeOut{}, err // ErrSuspended: Run exits 0, the task sleeps
		}
		child, err := bridge.Await[int](ctx, c, in.Child)
		if err != nil {
			return bridgeOut{}, err
		}
		return bridgeOut{One: one, Two: two, Child: child, RunID: info.RunID}, nil
	})
}

// TestCommandExecutorBridge runs a subprocess that checkpoints two steps
// through the bridge, is killed after the first, and on the next attempt
// resumes without running the first again; it then sleeps durably and
// awaits a job in another queue. The worker's payload codec is on: the
// subprocess sees decoded input and its checkpoints are stored encrypted.
func TestCommandExecutorBridge(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	ctx := ctxT(t)
	aead := mustAES(t, testKey(4))
	c, err := boson.NewClient(e.b, boson.ClientOptions{Clock: e.clock, Logger: quiet, PollInterval: 10 * time.Millisecond, Codec: aead})
	if err != nil {
		t.Fatal(err)
	}
	w := e.worker(func(o *boson.WorkerOptions) { o.Queues = []string{"default", "children"}; o.Codec = aead })
	job := boson.NewTask[bridgeIn, bridgeOut]("bridged")
	child := boson.NewTask[int, int]("child")
	if err := w.RegisterExecutor(job.Name(), boson.CommandExecutor{Path: self, Env: []string{bridgeChildEnv + "=1"}, Bridge: true}); err != nil {
		t.Fatal(err)
	}
	if err := boson.Register(w, child, func(_ context.Context, n int) (int, error) { return n * 10, nil }); err != nil {
		t.Fatal(err)
	}
	e.start(w)
	ch, err := boson.Spawn(ctx, c, child, 4, boson.WithQueue("children"))
	if err != nil {
		t.Fatal(err)
	}
	ledger := filepath.Join(t.TempDir(), "ledger")
	h, err := boson.Spawn(ctx, c, job, bridgeIn{Ledger: ledger, Child: ch.ID()}, boson.WithRetry(core.RetryPolicy{Initial: time.Second, Jitter: core.NoJitter}))
	if err != nil {
		t.Fatal(err)
	}
	// Attempt 1 is killed after step one; move the clock to its retry.
	j := e.waitState(h.ID(), core.StateQueued)
	eventually(t, "the failed first attempt", func() bool { j = e.job(h.ID()); return j.Attempt == 1 && j.State == core.StateQueued })
	if !contains(j.LastError, "signal: killed") {
		t.Fatalf("attempt 1 ended with %q", j.LastError)
	}
	e.clock.Set(j.RunAt)
	// Attempt 2 sleeps; wake it.
	j = e.waitState(h.ID(), core.StateSleeping)
	e.clock.Set(j.RunAt)
	out, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	final := e.job(h.ID())
	if out.One != 1 || out.Two != 2 || out.Child != 40 || out.RunID != core.RunID(h.ID(), final.Lease.Token) {
		t.Fatalf("out %+v (job token %d)", out, final.Lease.Token)
	}
	got, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "one attempt 1\ntwo attempt 2\n" {
		t.Fatalf("step bodies ran:\n%s", got)
	}
	cps, err := e.b.Checkpoints(ctx, h.ID())
	if err != nil || len(cps) != 4 {
		t.Fatalf("checkpoints %v %v", cps, err)
	}
	want := map[string]string{"step-one": "1", "step-two": "2", "await-" + ch.ID(): "40"}
	for _, cp := range cps {
		plain, err := aead.Decode(boson.CodecScope{Part: boson.PartCheckpoint, Task: job.Name(), JobID: h.ID(), Name: cp.Step}, cp.Value)
		if err != nil {
			t.Errorf("checkpoint %s is not sealed by the worker's codec: %v", cp.Step, err)
		} else if w, ok := want[cp.Step]; ok && string(plain) != w {
			t.Errorf("checkpoint %s holds %q, want %q", cp.Step, plain, w)
		}
	}
	runs, err := c.ListRuns(ctx, h.ID())
	if err != nil || len(runs) != 3 || runs[0].Status != core.RunFailed || runs[2].Status != core.RunSucceeded {
		t.Fatalf("runs %+v %v", runs, err)
	}
}

// TestCommandExecutorBridgeMisuse: a child whose executor offers no
// bridge fails permanently saying so; a bridge outside a worker's attempt
// is refused.
func TestCommandExecutorBridgeMisuse(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(nil)
	job := boson.NewTask[bridgeIn, bridgeOut]("unbridged")
	if err := w.RegisterExecutor(job.Name(), boson.CommandExecutor{Path: self, Env: []string{bridgeChildEnv + "=1"}}); err != nil {
		t.Fatal(err)
	}
	e.start(w)
	h, err := boson.Spawn(ctx, e.client, job, bridgeIn{Ledger: filepath.Join(t.TempDir(), "l")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Wait(ctx); !errors.Is(err, boson.ErrTaskFailed) || !contains(err.Error(), bridge.EnvSocket+" is not set") {
		t.Fatalf("%v", err)
	}
	if j := e.job(h.ID()); j.Attempt != 1 {
		t.Fatalf("attempt %d", j.Attempt)
	}
	_, err = boson.CommandExecutor{Path: self, Bridge: true}.Execute(ctx, &boson.Execution{})
	if !errors.Is(err, boson.ErrNotInTask) || !boson.IsPermanent(err) {
		t.Fatalf("outside an attempt: %v", err)
	}
	if bridge.PermanentExitCode != boson.PermanentExitCode {
		t.Fatal("the bridge's permanent exit code differs from the executor's")
	}
}
