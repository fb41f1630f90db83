// Package mutants proves that the conformance suite notices a broken store
// by breaking the store's own code: each [Mutant] replaces one exact piece of
// a backend's source (a SQL clause, a line of a Lua script, a fence check in
// Go) and the suite, built with the change through go's -overlay flag and run
// in a subprocess, must fail in the cases the mutant names.
//
// Nothing in the backend's source differs for the test but the mutant: the
// overlay swaps the file's text at build time, so the mutant runs exactly
// the code that ships, less one rule (compiled without inlining, which
// changes its speed, not what it does). A mutant whose Find text no longer occurs
// exactly once fails as stale, so that a change to the store cannot retire a
// mutant silently. The overlay also leaves out the package's test files that
// the target test cannot reach, which a mutant's build would otherwise
// compile for nothing.
//
// A backend's test lists its mutants and calls [Run]:
//
//	func TestMutants(t *testing.T) {
//		mutants.Run(t, mutants.Target{Test: "TestConformance"}, storeMutants)
//	}
package mutants

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The contract properties that a backend's mutants must cover between them
// (see [RequireCoverage]). Each is one rule of core.QueueBackend's doc.
const (
	RescueAfterExpiry   = "rescue only after expiry"
	ExhaustedFails      = "exhausted attempts end failed"
	TokensIncrease      = "strictly increasing tokens"
	BatchAtomic         = "enqueue batch atomicity"
	CleanupHorizon      = "the cleanup horizon"
	CleanupTerminalOnly = "cleanup of terminal jobs only"
	CleanupReleasesKey  = "key release by cleanup"
	PagesExactlyOnce    = "pagination exactly-once"
	ClaimLimit          = "claim limit"
	QueueIsolation      = "queue isolation"
	RetryGrowsAttempts  = "Retry growing MaxAttempts"
	Notifications       = "notifications"
	FenceFail           = "fencing of Fail"
	FenceSleep          = "fencing of Sleep"
	ClaimExclusive      = "no job handed to two claims"
	ClaimDueOnly        = "claim only due jobs"
	FenceWrites         = "fenced writes check the token"
	// QueueDeclaration: CreateQueue declares a queue once, atomically, and
	// verifies the stored config on every repeat (core.QueueDeclarer).
	QueueDeclaration = "queue declaration verifies the stored config"
)

// Properties lists every property a store's mutants are checked against.
var Properties = []string{
	RescueAfterExpiry, ExhaustedFails, TokensIncrease, BatchAtomic, CleanupHorizon,
	CleanupTerminalOnly, CleanupReleasesKey, PagesExactlyOnce, ClaimLimit, QueueIsolation,
	RetryGrowsAttempts, Notifications, FenceFail, FenceSleep, ClaimExclusive, ClaimDueOnly,
	FenceWrites, QueueDeclaration,
}

// The fan-in properties (core.Awaiter). They are not in [Properties]: a
// store that implements core.Awaiter appends [AwaitProperties] to the list
// it checks its mutants against.
const (
	// AwaitCounts: every terminal transition or deletion of an awaited
	// job counts it in each wait on it, once (a Retry never undoes it).
	AwaitCounts = "fan-in counts every end of an awaited job once"
	// AwaitWakes: the transition that satisfies a current wait makes the
	// waiting job due in the same step; a stale or unsatisfied wait wakes
	// nothing.
	AwaitWakes = "fan-in wakes a current wait once it is satisfied, and only then"
	// AwaitParks: AwaitJobs parks the job as a durable sleep does (lease
	// fenced, no attempt consumed), or changes nothing when it is refused.
	AwaitParks = "fan-in parks the waiting job without its claim"
	// AwaitCancelChildren: cancelling a job on a current wait with
	// CancelChildren cancels the awaited jobs not yet terminal.
	AwaitCancelChildren = "fan-in cancels the children of a cancelled waiting job"
)

// AwaitProperties lists the fan-in properties.
var AwaitProperties = []string{AwaitCounts, AwaitWakes, AwaitParks, AwaitCancelChildren}

// The bulk properties (core.BulkActor). They are not in [Properties]: a
// store that implements core.BulkActor appends [BulkProperties] to the
// list it checks its mutants against.
const (
	// BulkStateCheck: a bulk step applies its action only to the jobs
	// whose state in the store, when the step changes them, allows it.
	BulkStateCheck = "bulk steps check each job's state in the store"
	// BulkAtomic: a bulk step takes effect whole.
	BulkAtomic = "a bulk step takes effect whole"
)

// BulkProperties lists the bulk properties.
var BulkProperties = []string{BulkStateCheck, BulkAtomic}

// ModelCase is the suite's model-based case; a mutant that names it in
// CaughtBy must be caught by the random model on its own.
const ModelCase = "Model/StateMachine"

// Mutant is one deliberate defect in a backend's source.
type Mutant struct {
	// Name identifies the mutant; it becomes a subtest name.
	Name string
	// Breaks lists the properties the mutant violates: from [Properties],
	// from [AwaitProperties] for a store that implements core.Awaiter, or
	// from [BulkProperties] for one that implements core.BulkActor.
	Breaks []string
	// Edits are the changes, applied in order; a mutant that breaks a rule
	// enforced in two places (a script and its caller) edits both.
	Edits []Edit
	// CaughtBy names suite cases, relative to the target's root test (for
	// example "Claim/FutureRunAt"), that must fail against the mutant.
	CaughtBy []string
}

// Edit replaces one exact piece of one source file.
type Edit struct {
	// File is the source file, relative to the directory of the test that
	// calls [Run] (for example "../internal/engine/claim.go").
	File string
	// Find is the exact text to replace; it must occur exactly once in the
	// file as the edits before it left it.
	Find string
	// Replace is the text that replaces it.
	Replace string
}

// Target says which test of the calling package runs the suite.
type Target struct {
	// Test is the root test that calls conformance.Run, for example
	// "TestConformance".
	Test string
	// Timeout bounds one mutant's build and run; zero means 5 minutes.
	Timeout time.Duration
	// Args are extra flags for the test binary (for example
	// "-rapid.checks=50").
	Args []string
}

// FullEnv names the environment variable that makes [Run] hold every
// mutant to every case it names. Without it, Run leaves out [ModelCase]
// where a mutant names other cases too, since the random model is the slow
// part of a run; [RequireCoverage] still counts the model's mutants, and the
// full run proves them.
const FullEnv = "BOSON_MUTANTS_FULL"

// Run builds and runs the target's suite once per mutant, with the mutant's
// files swapped in, and fails unless every case the mutant names fails. The
// subprocesses run one at a time, without the race detector; the parent's
// environment (service URLs, BOSON_TEST_REQUIRE) is passed on. Run also
// fails when a Find text does not occur exactly once or the mutated code
// does not build.
func Run(t *testing.T, tgt Target, ms []Mutant) {
	t.Helper()
	if tgt.Test == "" {
		t.Fatal("mutants: Target.Test is empty")
	}
	if len(ms) == 0 {
		t.Fatal("mutants: no mutants")
	}
	seen := map[string]bool{}
	for _, m := range ms {
		if m.Name == "" || seen[m.Name] || len(m.CaughtBy) == 0 || len(m.Breaks) == 0 || len(m.Edits) == 0 {
			t.Fatalf("mutants: %q needs a unique name, Edits, Breaks and CaughtBy", m.Name)
		}
		seen[m.Name] = true
		for _, p := range m.Breaks {
			if !slices.Contains(Properties, p) && !slices.Contains(AwaitProperties, p) && !slices.Contains(BulkProperties, p) {
				t.Fatalf("mutants: %q breaks unknown property %q", m.Name, p)
			}
		}
	}
	var keep []string
	for _, m := range ms {
		for _, e := range m.Edits {
			if strings.HasSuffix(e.File, "_test.go") {
				keep = append(keep, e.File)
			}
		}
	}
	hidden, err := unreachedTests(".", tgt.Test, keep)
	if err != nil {
		t.Fatal(err)
	}
	full := os.Getenv(FullEnv) != ""
	for _, m := range ms {
		if !full && len(m.CaughtBy) > 1 {
			m.CaughtBy = slices.DeleteFunc(slices.Clone(m.CaughtBy), func(c string) bool { return c == ModelCase })
		}
		t.Run(m.Name, func(t *testing.T) {
			t.Parallel()
			failed, out, err := runMutant(t, tgt, m, hidden)
			if err == nil {
				t.Fatalf("the suite passed with mutant %q (breaks %s)", m.Name, strings.Join(m.Breaks, ", "))
			}
			if len(failed) == 0 {
				t.Fatalf("the run failed without failing a suite case: %v\n%s", err, Tail(out, 40))
			}
			for _, want := range m.CaughtBy {
				if !slices.Contains(failed, want) {
					t.Errorf("mutant %q was not caught by %s; failed cases: %v", m.Name, want, failed)
				}
			}
			t.Logf("mutant %q is caught by %d cases: %s", m.Name, len(failed), strings.Join(failed, ", "))
		})
	}
}

// RequireCoverage fails t unless ms, between them, break every property in
// want, and unless at least minModel of them are caught by [ModelCase].
func RequireCoverage(t *testing.T, ms []Mutant, want []string, minModel int) {
	t.Helper()
	covered, model := coverage(ms)
	for _, p := range want {
		if !covered[p] {
			t.Errorf("no mutant breaks %q", p)
		}
	}
	if model < minModel {
		t.Errorf("%d mutants are required to be caught by %s, want at least %d", model, ModelCase, minModel)
	}
}

// coverage returns the properties ms break and how many name [ModelCase].
func coverage(ms []Mutant) (covered map[string]bool, model int) {
	covered = map[string]bool{}
	for _, m := range ms {
		for _, p := range m.Breaks {
			covered[p] = true
		}
		if slices.Contains(m.CaughtBy, ModelCase) {
			model++
		}
	}
	return covered, model
}

// runMutant writes the mutated files, builds the package's tests with them
// through an overlay that also leaves out the hidden test files, runs the
// named cases, and returns the failed leaves.
func runMutant(t *testing.T, tgt Target, m Mutant, hidden []string) (failed []string, out []byte, err error) {
	t.Helper()
	dir := t.TempDir()
	texts := map[string][]byte{}
	var order []string
	for _, e := range m.Edits {
		src, aerr := filepath.Abs(e.File)
		if aerr != nil {
			t.Fatal(aerr)
		}
		text, ok := texts[src]
		if !ok {
			var rerr error
			if text, rerr = os.ReadFile(src); rerr != nil {
				t.Fatalf("mutant %q: %v", m.Name, rerr)
			}
			order = append(order, src)
		}
		if n := bytes.Count(text, []byte(e.Find)); n != 1 {
			t.Fatalf("stale mutant %q: its Find text occurs %d times in %s, want exactly once:\n%s", m.Name, n, e.File, e.Find)
		}
		texts[src] = bytes.Replace(text, []byte(e.Find), []byte(e.Replace), 1)
	}
	replace := map[string]string{}
	for i, src := range order {
		mutated := filepath.Join(dir, fmt.Sprintf("%d-%s", i, filepath.Base(src)))
		if werr := os.WriteFile(mutated, texts[src], 0o644); werr != nil {
			t.Fatal(werr)
		}
		replace[src] = mutated
	}
	for _, h := range hidden {
		replace[h] = "" // an empty backing path: the build treats the file as absent
	}
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": replace})
	overlayFile := filepath.Join(dir, "overlay.json")
	if werr := os.WriteFile(overlayFile, overlay, 0o644); werr != nil {
		t.Fatal(werr)
	}
	timeout := tgt.Timeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()
	// The build is the larger part of a mutant's cost, and it is made once:
	// vet has nothing to say of a deliberate defect, inlining is what costs
	// the compiler most (-l turns it off in the mutated package only; its
	// dependencies come from the build cache as they are), and no one
	// debugs the binary (-w drops its DWARF).
	args := []string{"test", "-overlay=" + overlayFile, "-count=1", "-timeout=" + timeout.String(),
		"-vet=off", "-gcflags=-l", "-ldflags=-w",
		"-run=" + runPattern(tgt.Test, m.CaughtBy), "-v", "."}
	if len(tgt.Args) > 0 {
		args = append(args, "-args")
		args = append(args, tgt.Args...)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err = cmd.CombinedOutput()
	if bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")) {
		t.Fatalf("mutant %q does not build:\n%s", m.Name, Tail(out, 30))
	}
	return FailedLeaves(tgt.Test, out), out, err
}

// runPattern selects the root test and, level by level, the named cases
// (a superset of them, which is all -run can say).
func runPattern(root string, cases []string) string {
	var levels [][]string
	for _, c := range cases {
		for i, part := range strings.Split(c, "/") {
			if i == len(levels) {
				levels = append(levels, nil)
			}
			if !slices.Contains(levels[i], part) {
				levels[i] = append(levels[i], part)
			}
		}
	}
	pat := "^" + regexp.QuoteMeta(root) + "$"
	for _, l := range levels {
		quoted := make([]string, len(l))
		for i, p := range l {
			quoted[i] = regexp.QuoteMeta(p)
		}
		pat += "/^(" + strings.Join(quoted, "|") + ")$"
	}
	return pat
}

// FailedLeaves reads the verbose output of go test and returns, sorted, the
// failed subtests of root, relative to it, that have no failed subtest of
// their own.
func FailedLeaves(root string, out []byte) []string {
	line := regexp.MustCompile(`^\s*--- FAIL: ` + regexp.QuoteMeta(root) + `/(\S+) \(`)
	var all []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		if m := line.FindStringSubmatch(sc.Text()); m != nil {
			all = append(all, m[1])
		}
	}
	var leaves []string
	for _, n := range all {
		leaf := true
		for _, o := range all {
			if strings.HasPrefix(o, n+"/") {
				leaf = false
				break
			}
		}
		if leaf && !slices.Contains(leaves, n) {
			leaves = append(leaves, n)
		}
	}
	slices.Sort(leaves)
	return leaves
}

// Tail returns the last lines lines of a go test run's output, for a
// failure message that shows how the run ended.
func Tail(b []byte, lines int) string {
	ls := strings.Split(string(b), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// String describes a mutant for logs.
func (m Mutant) String() string {
	files := make([]string, 0, len(m.Edits))
	for _, e := range m.Edits {
		if !slices.Contains(files, e.File) {
			files = append(files, e.File)
		}
	}
	return fmt.Sprintf("%s (%s: breaks %s)", m.Name, strings.Join(files, ", "), strings.Join(m.Breaks, ", "))
}
