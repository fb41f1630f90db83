package main

import (
	"os"
	"regexp"
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
)

// TestMain lets the test binary act as the subprocess of an attempt, as the
// example's own binary does: the executor re-executes os.Executable().
func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "render" {
		os.Exit(renderAttempt(os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestProvisionedExecutor(t *testing.T) {
	out := extest.Run(t, run)
	extest.Contains(t, out,
		"cat.jpg:\n  attempt 1 succeeded\n  => cat@128px.png, rendered by pid ",
		"huge-panorama.jpg:\n  attempt 1 failed: exit status 1: pid ",
		": out of memory\n  attempt 2 succeeded\n  => huge-panorama@256px.png",
		"broken.jpg:\n  attempt 1 failed: exit status 65: pid ",
		"width 0 is not renderable\n  => failed for good",
	)
	extest.Lacks(t, out, "a fresh process: false")
	// Each attempt ran in a process of its own.
	pids := map[string]bool{}
	for _, m := range regexp.MustCompile(`pid (\d+)`).FindAllStringSubmatch(out, -1) {
		if pids[m[1]] {
			t.Errorf("pid %s ran more than one attempt", m[1])
		}
		pids[m[1]] = true
	}
	if len(pids) != 5 { // the worker and four attempts
		t.Errorf("saw %d pids, want 5", len(pids))
	}
}
