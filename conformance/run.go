package conformance

import "testing"

// area is one group of suite cases; each case is a parallel subtest with
// its own backend.
type area struct {
	name string
	run  func(t *testing.T, h Harness)
}

// areas lists the suite in the order it reports.
var areas = []area{
	{"Enqueue", testEnqueue},
	{"Validation", testValidation},
	{"Idempotency", testIdempotency},
	{"RateLimits", testRateLimits},
	{"Claim", testClaim},
	{"Exclusivity", testExclusivity},
	{"Lease", testLease},
	{"Fencing", testFencing},
	{"Outcome", testOutcome},
	{"Sleep", testSleep},
	{"Checkpoint", testCheckpoint},
	{"Cancel", testCancel},
	{"Retry", testRetry},
	{"Deadline", testDeadline},
	{"Reads", testReads},
	{"Config", testConfig},
	{"Cleanup", testCleanup},
	{"Lifecycle", testLifecycle},
	{"Capabilities", testCapabilities},
	{"TxControl", testTxControl},
	{"Runs", testRuns},
	{"Search", testSearch},
	{"Tasks", testTasks},
	{"Delete", testDelete},
	{"Declare", testDeclare},
	{"Await", testAwait},
	{"Bulk", testBulk},
	{"Model", testModel},
	{"FlowLimits", testFlowLimits},
	{"FlowRates", testFlowRates},
	{"FlowSequence", testFlowSequence},
	{"FlowUnique", testFlowUnique},
	{"FlowReads", testFlowReads},
	{"FlowExact", testFlowExact},
}

// Run runs the conformance suite against the backend that h describes.
//
// Every case is a subtest named Area/Case that calls t.Parallel and gets a
// fresh backend from h.New with its own [core.ManualClock]; no case sleeps
// to wait for time. A backend conforms when every case passes; a case never
// skips because of the backend (capabilities that h does not declare are
// checked to report [core.ErrUnsupported]).
//
// Run a single case with go test's -run flag, for example
// -run 'TestMyBackend/Claim/Order'. The model-based case prints a seed on
// failure; -rapid.seed=N replays it.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("conformance: Harness.New is nil")
	}
	if h.Capabilities.TxEnqueue && h.BeginTx == nil {
		t.Fatal("conformance: Harness declares TxEnqueue but BeginTx is nil")
	}
	if h.Capabilities.TxControl && h.BeginTx == nil {
		t.Fatal("conformance: Harness declares TxControl but BeginTx is nil")
	}
	for _, a := range areas {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			a.run(t, h)
		})
	}
}

// cases runs each named case as a parallel subtest with a fresh env.
func cases(t *testing.T, h Harness, cs map[string]func(e *env)) {
	t.Helper()
	for _, name := range sortedKeys(cs) {
		fn := cs[name]
		t.Run(name, func(t *testing.T) { fn(newEnv(t, h)) })
	}
}
