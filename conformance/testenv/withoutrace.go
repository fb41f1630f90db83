package testenv

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/conformance/mutants"
)

// WithoutRace runs the calling top-level test again in a child go test of
// the same package built without the race detector, when this binary has
// it, and reports whether it did; the caller returns at once when it did,
// and the test's outcome is the child's. Without the race detector it does
// nothing and returns false, so the test runs in this process.
//
// It is for a store's variant harnesses (the same store code behind another
// server version, topology, connection path or script mode): they run the
// whole suite, case for case, at a fraction of the race detector's cost,
// while the store's main harness runs it under the race detector. The child
// inherits the environment (service URLs, BOSON_TEST_REQUIRE); its failed
// cases, its skips and the tail of its output are reported here.
func WithoutRace(t *testing.T) bool {
	t.Helper()
	if strings.Contains(t.Name(), "/") {
		t.Fatalf("testenv.WithoutRace: %s is a subtest; call it from a top-level test", t.Name())
	}
	return WithoutRaceRun(t, t.Name())
}

// WithoutRaceRun runs the tests that cases names (a top-level test, or a
// path of its subtests such as "TestConformance/FlowExact") in a child go
// test of the same package built without the race detector, when this
// binary has it, and reports whether it did; t passes or fails as the
// child's run of them does. Without the race detector it does nothing and
// returns false.
//
// A test under the race detector uses it for cases that the detector
// would slow down many times over, such as the suite's FlowExact races at
// their full size, while it runs them at a smaller size itself.
func WithoutRaceRun(t *testing.T, cases string) bool {
	t.Helper()
	if !raceEnabled {
		return false
	}
	parts := strings.Split(cases, "/")
	name := parts[0]
	pattern := make([]string, len(parts))
	for i, p := range parts {
		pattern[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	timeout := 20 * time.Minute
	if d, ok := t.Deadline(); ok {
		timeout = time.Until(d) - 30*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-v", "-vet=off", "-timeout="+timeout.Round(time.Second).String(),
		"-run="+strings.Join(pattern, "/"), ".")
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	for _, l := range bytes.Split(out, []byte("\n")) {
		if bytes.Contains(l, []byte("--- SKIP")) {
			t.Logf("without the race detector: %s", bytes.TrimSpace(l))
		}
	}
	if err != nil {
		t.Fatalf("%s failed without the race detector (%v); failed cases: %v\n%s", cases, err,
			mutants.FailedLeaves(name, out), mutants.Tail(out, 60))
	}
	if !bytes.Contains(out, []byte("--- PASS: "+cases+" ")) {
		if bytes.Contains(out, []byte("--- SKIP: "+cases+" ")) {
			t.Skipf("%s skipped without the race detector:\n%s", cases, mutants.Tail(out, 20))
		}
		t.Fatalf("%s did not run without the race detector:\n%s", cases, mutants.Tail(out, 30))
	}
	t.Logf("%s passed %d cases without the race detector in %s", cases,
		bytes.Count(out, []byte("--- PASS: "+cases+"/")), time.Since(start).Round(time.Second))
	return true
}
