package conformance_test

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/boson-go/boson/conformance/internal/faulty"
	"github.com/boson-go/boson/conformance/mutants"
)

// TestSuiteCatchesFaultyBackends runs the suite, in a subprocess of this
// test binary, against mem wrapped in each deliberate fault, and checks
// that the run fails and that the cases named for the fault are among the
// failures.
func TestSuiteCatchesFaultyBackends(t *testing.T) {
	if os.Getenv(faultEnv) != "" {
		return // inside a faulty-backend subprocess
	}
	names := faulty.Names()
	if len(names) < 5 {
		t.Fatalf("only %d faulty backends, want at least 5", len(names))
	}
	for _, name := range names {
		fault := faulty.Faults[name]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			failed, out, err := runFaulty(t, name, fault.CaughtBy)
			if err == nil {
				t.Fatalf("the suite passed against %q (%s)", name, fault.What)
			}
			if len(failed) == 0 {
				t.Fatalf("the subprocess failed without failing a suite case: %v\n%s", err, tail(out, 40))
			}
			for _, want := range fault.CaughtBy {
				if !slices.Contains(failed, want) {
					t.Errorf("fault %q (%s) was not caught by %s; failed cases: %v", name, fault.What, want, failed)
				}
			}
			t.Logf("fault %q is caught by %d cases: %s", name, len(failed), strings.Join(failed, ", "))
		})
	}
}

// runFaulty runs TestMem in a subprocess with the fault selected, and
// returns the leaf cases that failed. It runs the areas of the cases that
// must catch the fault (the whole suite when it names none): what the
// test asserts is that those cases fail, and an area's cases do not
// depend on the other areas.
func runFaulty(t *testing.T, fault string, caughtBy []string) (failed []string, out []byte, err error) {
	t.Helper()
	cmd := exec.Command(os.Args[0],
		"-test.run="+faultyRun(caughtBy), "-test.count=1", "-test.timeout=5m",
		"-rapid.nofailfile", "-rapid.shrinktime=2s", "-rapid.checks=50")
	cmd.Env = append(os.Environ(), faultEnv+"="+fault)
	out, err = cmd.CombinedOutput()
	return mutants.FailedLeaves("TestMem", out), out, err
}

// faultyRun is the -test.run pattern of the areas that cases name.
func faultyRun(cases []string) string {
	var areas []string
	for _, c := range cases {
		area, _, _ := strings.Cut(c, "/")
		if q := regexp.QuoteMeta(area); !slices.Contains(areas, q) {
			areas = append(areas, q)
		}
	}
	if len(areas) == 0 {
		return "^TestMem$"
	}
	return "^TestMem$/^(" + strings.Join(areas, "|") + ")$"
}

func tail(b []byte, lines int) string {
	ls := strings.Split(string(b), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}
