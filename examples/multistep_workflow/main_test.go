package main

import (
	"path/filepath"
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
)

func TestMultistepWorkflow(t *testing.T) {
	out := extest.Run(t, run, "-db", filepath.Join(t.TempDir(), "queue.db"))
	extest.Contains(t, out,
		"attempt 1: fetch     ran -> [apple;1.20 pear;0.95 plum;2.10]",
		"attempt 1: transform ran -> [APPLE=1.20 PEAR=0.95 PLUM=2.10]",
		"attempt 1: load      failed: warehouse is read-only",
		"attempt 2: fetch     replayed from its checkpoint",
		"attempt 2: transform replayed from its checkpoint",
		"attempt 2: load      ran -> 3 rows written",
		"done: 3 rows imported in 2 attempts; checkpoints step-fetch, step-load, step-transform",
	)
	extest.Lacks(t, out, "attempt 2: fetch     ran", "attempt 2: transform ran")
}
