package boson_test

import (
	"errors"
	"os/exec"
	"testing"

	boson "github.com/boson-go/boson/runtime"
)

func TestCommandExecutor(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(nil)
	echo := boson.NewTask[map[string]int, map[string]int]("echo")
	perm := boson.NewTask[int, int]("perm")
	if err := w.RegisterExecutor(echo.Name(), boson.CommandExecutor{Path: sh, Args: []string{"-c", `test "$BOSON_TASK" = echo && cat`}}); err != nil {
		t.Fatal(err)
	}
	if err := w.RegisterExecutor(perm.Name(), boson.CommandExecutor{Path: sh, Args: []string{"-c", "echo nope >&2; exit 65"}}); err != nil {
		t.Fatal(err)
	}
	e.start(w)
	h, _ := boson.Spawn(ctx, e.client, echo, map[string]int{"x": 1})
	out, err := h.Wait(ctx)
	if err != nil || out["x"] != 1 {
		t.Fatalf("%v %v", out, err)
	}
	hp, _ := boson.Spawn(ctx, e.client, perm, 1)
	if _, err := hp.Wait(ctx); !errors.Is(err, boson.ErrTaskFailed) || !contains(err.Error(), "nope") {
		t.Fatalf("%v", err)
	}
	if j := e.job(hp.ID()); j.Attempt != 1 {
		t.Fatalf("attempt %d", j.Attempt)
	}
}
