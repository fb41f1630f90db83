package main

import (
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
)

func TestCancellation(t *testing.T) {
	out := extest.Run(t, run)
	extest.Contains(t, out,
		`explicit, waiting: cancelled after 0 attempt(s), reason "customer closed the account"`,
		`started "running"`,
		`explicit, running: cancelled after 1 attempt(s), reason "user pressed stop"`,
		"running: handler stopped:",
		`started "bounded"`,
		`deadline, running: cancelled after 1 attempt(s), reason "deadline exceeded: max duration from first start"`,
		"bounded: handler stopped:",
		`deadline, waiting: cancelled after 0 attempt(s), reason "deadline exceeded: max delay before first start"`,
		"done: 2 executions, 2 cancelled while running, 0 completed",
	)
}
