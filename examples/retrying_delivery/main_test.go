package main

import (
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
)

func TestRetryingDelivery(t *testing.T) {
	out := extest.Run(t, run)
	extest.Contains(t, out,
		"https://flaky.example/hook\n  attempt 1: failed",
		"  attempt 3: succeeded",
		"=> delivered, status 200, after 3 attempt(s)",
		"https://down.example/hook\n",
		"  attempt 4: failed",
		"=> failed after 4 attempt(s)",
		"https://gone.example/hook\n  attempt 1: failed",
		"410 gone",
		"=> failed after 1 attempt(s)",
		"done: 8 executions, 1 completed, 7 failed attempts",
	)
}
