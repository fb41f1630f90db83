package bosontest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	boson "github.com/boson-go/boson/runtime"
	"github.com/boson-go/boson/runtime/bosontest"
)

type order struct{ ID int }

var (
	placeOrder = boson.NewTask[order, string]("place-order")
	sendEmail  = boson.NewTask[string, bool]("send-email")
	reserve    = boson.NewStep[int]("reserve")
)

func TestRunStepsSleepsAndSpawns(t *testing.T) {
	ctx := context.Background()
	h := bosontest.New(t)
	reserved := 0
	handler := func(ctx context.Context, o order) (string, error) {
		n, err := reserve.Run(ctx, func(context.Context) (int, error) { reserved++; return o.ID * 10, nil })
		if err != nil {
			return "", err
		}
		if err := boson.SleepFor(ctx, "cool-off", time.Hour); err != nil {
			return "", err
		}
		if _, err := boson.Spawn(ctx, h.Client, sendEmail, "order confirmed", boson.WithQueue("mail")); err != nil {
			return "", err
		}
		if n != 70 {
			return "", boson.Permanent(errors.New("wrong reservation"))
		}
		return "ok", nil
	}
	res := bosontest.Run(ctx, h, placeOrder, handler, order{ID: 7}, boson.WithHeader("tenant", "t1"))
	if !res.Suspended || !res.WakeAt.Equal(h.Clock.Now().Add(time.Hour)) {
		t.Fatalf("first run: %+v", res)
	}
	if _, ok := h.Checkpoints(res.JobID)["step-reserve"]; !ok {
		t.Fatalf("checkpoints %v", h.Checkpoints(res.JobID))
	}
	h.Clock.Advance(time.Hour)
	res = bosontest.Again(ctx, h, placeOrder, handler, res)
	if res.Err != nil || res.Output != "ok" || reserved != 1 {
		t.Fatalf("second run: %+v reserved %d", res, reserved)
	}
	if got := bosontest.SpawnedOf(t, h, sendEmail); len(got) != 1 || got[0] != "order confirmed" {
		t.Fatalf("spawned %v", got)
	}
}

func TestAwaitCompletedByTest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := bosontest.New(t)
	child, err := boson.Spawn(ctx, h.Client, sendEmail, "hi", boson.WithQueue("mail"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Complete(child.ID(), true); err != nil {
		t.Fatal(err)
	}
	res := bosontest.Run(ctx, h, placeOrder, func(ctx context.Context, o order) (string, error) {
		ok, err := boson.Await(ctx, child)
		if err != nil || !ok {
			return "", err
		}
		return "sent", nil
	}, order{})
	if res.Err != nil || res.Output != "sent" {
		t.Fatalf("%+v", res)
	}
}
