package main

import (
	"strings"
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
)

func TestCheckpointedOrder(t *testing.T) {
	out := extest.Run(t, run)
	extest.Contains(t, out,
		"attempt 1 of order 1042\n  reserve stock: 1 x teapot (inventory call #1)\n  charge card: 3900 cents",
		"(payment call #1)",
		"attempt 2 of order 1042\n  ship: label printed (carrier call #1)",
		"replayed: reservation RES-1042, charge CH-1042",
		"run 1: failed",
		"nil map in the shipping label printer",
		"run 2: succeeded",
		"receipt: {Reservation:RES-1042 Charge:CH-1042 Tracking:TRK-1042}",
		"done: reserved 1 time(s), charged 1 time(s), shipped 1 time(s)",
	)
	if n := strings.Count(out, "charge card:"); n != 1 {
		t.Errorf("the charge body ran %d times, want 1", n)
	}
}
