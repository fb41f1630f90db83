package core_test

import (
	"errors"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

func TestValidateAwait(t *testing.T) {
	ok := core.AwaitRequest{Lease: core.Lease{JobID: "p", Token: 1}, JobIDs: []string{"a", "b"}, Mode: core.AwaitAll}
	if err := core.ValidateAwait(ok); err != nil {
		t.Fatalf("valid request refused: %v", err)
	}
	many := make([]string, core.MaxAwaitJobs+1)
	for i := range many {
		many[i] = "x" + time.Duration(i).String()
	}
	bad := map[string]func(r *core.AwaitRequest){
		"no lease":     func(r *core.AwaitRequest) { r.Lease = core.Lease{} },
		"mode":         func(r *core.AwaitRequest) { r.Mode = "some" },
		"empty":        func(r *core.AwaitRequest) { r.JobIDs = nil },
		"too many":     func(r *core.AwaitRequest) { r.JobIDs = many },
		"self":         func(r *core.AwaitRequest) { r.JobIDs = []string{"a", "p"} },
		"duplicate":    func(r *core.AwaitRequest) { r.JobIDs = []string{"a", "a"} },
		"blank id":     func(r *core.AwaitRequest) { r.JobIDs = []string{""} },
		"until absurd": func(r *core.AwaitRequest) { r.Until = core.WaitForever },
	}
	for name, mut := range bad {
		r := ok
		r.JobIDs = append([]string(nil), ok.JobIDs...)
		mut(&r)
		if err := core.ValidateAwait(r); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("%s: got %v, want ErrInvalidArgument", name, err)
		}
	}
}

func TestAwaitModeSatisfied(t *testing.T) {
	cases := []struct {
		mode           core.AwaitMode
		total, pending int
		want           bool
	}{
		{core.AwaitAll, 3, 0, true}, {core.AwaitAll, 3, 1, false},
		{core.AwaitAny, 3, 2, true}, {core.AwaitAny, 3, 3, false},
	}
	for _, c := range cases {
		if got := c.mode.Satisfied(c.total, c.pending); got != c.want {
			t.Errorf("%s %d/%d: got %v", c.mode, c.pending, c.total, got)
		}
	}
	if !(core.AwaitRequest{}).WakeAt().Equal(core.WaitForever) {
		t.Error("zero Until must wake at WaitForever")
	}
}
