package bench

import (
	"context"
	"errors"
	"strings"
	"testing"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

// flowStore is a store seen with one more capability than the bare
// QueueBackend: core.FlowController, answered by the store below.
type flowStore struct {
	core.QueueBackend
	f core.FlowController
}

func (s flowStore) RunningByKey(ctx context.Context, task string, limit int) ([]core.KeyCount, error) {
	return s.f.RunningByKey(ctx, task, limit)
}

func TestWrapKeepsCapabilities(t *testing.T) {
	b := mem.New(mem.Options{})
	defer b.Close()
	var raw core.QueueBackend = b
	_, w := Wrap(raw)
	_, rawFlow := raw.(core.FlowController)
	_, wrapFlow := w.(core.FlowController)
	_, rawNotify := raw.(core.Notifier)
	_, wrapNotify := w.(core.Notifier)
	if rawFlow != wrapFlow || rawNotify != wrapNotify {
		t.Fatalf("Wrap of mem: flow %v->%v, notifier %v->%v", rawFlow, wrapFlow, rawNotify, wrapNotify)
	}
	// Without Notifier and with FlowController (the bare interface hides
	// mem's Notifier).
	if !rawFlow {
		return // mem is no FlowController here: the pairing above is the check
	}
	_, w = Wrap(flowStore{QueueBackend: struct{ core.QueueBackend }{b}, f: raw.(core.FlowController)})
	if _, ok := w.(core.FlowController); !ok {
		t.Fatal("Wrap lost FlowController")
	}
	if _, ok := w.(core.Notifier); ok {
		t.Fatal("Wrap invented Notifier")
	}
}

func TestLimitVerdict(t *testing.T) {
	rep := &Report{Kind: "mem", Config: Config{Concurrency: 100}, AllRuns: map[string][]Result{
		"batch-noop":  {{Scenario: "batch-noop", DrainPerSec: 100}, {Scenario: "batch-noop", DrainPerSec: 200}, {Scenario: "batch-noop", DrainPerSec: 100}},
		"batch-limit": {{Scenario: "batch-limit", DrainPerSec: 95}, {Scenario: "batch-limit", DrainPerSec: 160}, {Scenario: "batch-limit", DrainPerSec: 92}},
	}}
	rep.finish()
	var got *Verdict
	for i := range rep.Verdicts {
		if strings.HasPrefix(rep.Verdicts[i].Goal, "drain with a per-key limit over 100 keys") {
			got = &rep.Verdicts[i]
		}
	}
	if got == nil {
		t.Fatalf("no limit verdict in %+v", rep.Verdicts)
	}
	if got.Value != 0.92 || !got.Met || !strings.Contains(got.Got, "median of 0.95, 0.80, 0.92") {
		t.Fatalf("limit verdict %+v", got)
	}
	found := false
	for _, r := range rep.Results {
		found = found || r.Scenario == "batch-limit"
	}
	if !found {
		t.Fatal("batch-limit missing from the results")
	}
}

func TestBatchLimitNeedsFlowControl(t *testing.T) {
	// On a store without flow control the scenario fails rather than
	// measuring a limit that nobody enforces.
	b := mem.New(mem.Options{})
	defer b.Close()
	var raw core.QueueBackend = struct{ core.QueueBackend }{b}
	_, err := Run(context.Background(), Store{Backend: raw, Kind: "mem"}, Config{Scenarios: []string{ScenarioBatchLimit}, Runs: 1, Jobs: 50}, nil, nil)
	if !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("Run err = %v, want core.ErrUnsupported", err)
	}
}
