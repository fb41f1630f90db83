package main

import (
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
)

func TestCustomBackend(t *testing.T) {
	out := extest.Run(t, run)
	extest.Contains(t, out,
		"square(1) = 1\n", "square(2) = 4\n", "square(3) = 9\n", "square(4) = 16\n", "square(5) = 25\n",
		"jobs through the adapter: 5 enqueued, 8 claimed, 5 completed, 3 failed attempts",
		"enqueue calls: 1 (one atomic batch)",
		"methods called: [Claim ", " Complete ", " Enqueue ", " Fail",
	)
}
