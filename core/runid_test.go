package core_test

import (
	"testing"

	"github.com/boson-go/boson/core"
)

func TestRunID(t *testing.T) {
	if got := core.RunID("01JOB", 7); got != "01JOB.7" {
		t.Fatalf("RunID = %q", got)
	}
	if core.RunID("a", 1) == core.RunID("a", 2) || core.RunID("a", 12) == core.RunID("a1", 2) {
		t.Fatal("RunID repeats an id")
	}
}
