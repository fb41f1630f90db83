package main

import (
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
)

func TestFlowControl(t *testing.T) {
	out := extest.Run(t, run)
	extest.Contains(t, out,
		"stored limit: export-report max_running_per_key=2",
		"sequence account-42: changes ran in spawn order 1 2 3 4 5, at most 1 at once",
		"sequence account-7: changes ran in spawn order 1 2 3 4 5, at most 1 at once",
		"rebuild products while one is active: reused=true, same job=true",
		"rebuild orders meanwhile: a new job=true",
		"rebuild products after the first finished: a new job=true",
		"a limit key on a store without flow control: refused=true",
		"done",
	)
	// The limit holds for every tenant: never more than 2 at once.
	extest.Lacks(t, out, "at most 3 running", "at most 4 running", "at most 5 running")
	for _, tenant := range []string{"acme", "globex", "initech"} {
		extest.Contains(t, out, "tenant "+tenant+": 5 exports, at most ")
	}
}
