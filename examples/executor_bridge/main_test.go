package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
	"github.com/boson-go/boson/runtime/bridge"
)

// TestMain lets the test binary act as the child of an attempt, as the
// example's own binary does: the executor re-executes os.Executable().
func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "transcode" {
		bridge.Main(transcode)
	}
	os.Exit(m.Run())
}

func TestExecutorBridge(t *testing.T) {
	out := extest.Run(t, run)
	extest.Contains(t, out,
		"killed pid ",
		"attempt 1 (pid ",
		"): ran step download\n",
		"): started step encode\n",
		"attempt 2 (pid ",
		"): step download replayed from its checkpoint: /scratch/launch.mov\n",
		"): finished step encode\n",
		"result: /scratch/launch.mov -> /scratch/launch.mp4\n",
		"run 1 (attempt 1) failed: signal: killed\n",
		"run 2 (attempt 2) succeeded\n",
	)
	if n := strings.Count(out, "ran step download"); n != 1 {
		t.Errorf("step download ran %d times, want 1", n)
	}
	if n := strings.Count(out, "finished step encode"); n != 1 {
		t.Errorf("step encode finished %d times, want 1", n)
	}
	// The process killed is the one that ran attempt 1.
	m := regexp.MustCompile(`killed pid (\d+) `).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "attempt 1 (pid "+m[1]+"): started step encode") {
		t.Errorf("the killed pid is not attempt 1's")
	}
}
