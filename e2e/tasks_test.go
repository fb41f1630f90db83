package e2e_test

import (
	"context"
	"errors"
	"sync/atomic"

	boson "github.com/boson-go/boson/runtime"
)

type addIn struct{ A, B int }
type addOut struct{ Sum int }

var (
	addTask   = boson.NewTask[addIn, addOut]("add")
	echoTask  = boson.NewTask[int, int]("echo")
	childTask = boson.NewTask[int, int]("child")
	stepOne   = boson.NewStep[int]("one")
	stepTwo   = boson.NewStep[int]("two")
)

func add(_ context.Context, in addIn) (addOut, error) { return addOut{Sum: in.A + in.B}, nil }

func echo(_ context.Context, n int) (int, error) { return n, nil }

// failTimes returns a handler that fails its first n calls.
func failTimes(n int32) (func(context.Context, int) (int, error), *atomic.Int32) {
	var calls atomic.Int32
	return func(_ context.Context, in int) (int, error) {
		if calls.Add(1) <= n {
			return 0, errors.New("transient failure")
		}
		return in, nil
	}, &calls
}

// The input of the "typed" task before and after a change of meaning that
// keeps its JSON: the old build sent cents under "N", the new one a count.
type typedOldIn struct {
	Cents int `json:"N"`
}
type typedNewIn struct{ N int }

var (
	typedOld = boson.NewTask[typedOldIn, int]("typed")
	typedNew = boson.NewTask[typedNewIn, int]("typed")
)

// typedHandler returns a handler of typedNew that counts its calls.
func typedHandler(calls *atomic.Int32) func(context.Context, typedNewIn) (int, error) {
	return func(_ context.Context, in typedNewIn) (int, error) {
		calls.Add(1)
		return in.N, nil
	}
}
