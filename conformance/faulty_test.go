package conformance_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/boson-go/boson/conformance/internal/faulty"
)

// failLine matches go test's report of a failed subtest of TestMem.
var failLine = regexp.MustCompile(`^\s*--- FAIL: TestMem/(\S+) \(`)

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
			failed, out, err := runFaulty(t, name)
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
// returns the leaf cases that failed.
func runFaulty(t *testing.T, fault string) (failed []string, out []byte, err error) {
	t.Helper()
	cmd := exec.Command(os.Args[0],
		"-test.run=^TestMem$", "-test.count=1", "-test.timeout=5m",
		"-rapid.nofailfile", "-rapid.shrinktime=2s", "-rapid.checks=50")
	cmd.Env = append(os.Environ(), faultEnv+"="+fault)
	out, err = cmd.CombinedOutput()
	var all []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := failLine.FindStringSubmatch(sc.Text()); m != nil {
			all = append(all, m[1])
		}
	}
	// Keep leaves: drop a name that prefixes another failed name.
	for _, n := range all {
		leaf := true
		for _, o := range all {
			if strings.HasPrefix(o, n+"/") {
				leaf = false
				break
			}
		}
		if leaf {
			failed = append(failed, n)
		}
	}
	slices.Sort(failed)
	return failed, out, err
}

func tail(b []byte, lines int) string {
	ls := strings.Split(string(b), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}
