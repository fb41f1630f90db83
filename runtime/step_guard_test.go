package boson_test

import (
	"context"
	"errors"
	"testing"

	boson "github.com/boson-go/boson/runtime"
)

var stepGuarded = boson.NewStep[int]("guarded")

// TestStepRefusesDoneContext: a step whose context is done does not start
// its body, even when the job's checkpoints are loaded already (so that
// no backend call would notice the context).
func TestStepRefusesDoneContext(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	w := e.worker(nil)
	ran := make(chan bool, 1)
	stepErr := make(chan error, 1)
	_ = boson.Register(w, addTask, func(ctx context.Context, in addIn) (addOut, error) {
		if _, err := stepA.Run(ctx, func(context.Context) (int, error) { return 1, nil }); err != nil {
			return addOut{}, err
		}
		done, cancel := context.WithCancel(ctx)
		cancel()
		called := false
		_, err := stepGuarded.Run(done, func(context.Context) (int, error) { called = true; return 2, nil })
		ran <- called
		stepErr <- err
		return addOut{}, boson.Permanent(errors.New("stop"))
	})
	e.start(w)
	if _, err := boson.Spawn(ctx, e.client, addTask, addIn{}); err != nil {
		t.Fatal(err)
	}
	if <-ran {
		t.Error("the step body ran although its context was done")
	}
	if err := <-stepErr; !errors.Is(err, context.Canceled) {
		t.Errorf("step error %v, want context.Canceled", err)
	}
}
