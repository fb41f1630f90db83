package conformance_test

import (
	"context"
	"os"
	"testing"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/conformance"
	"github.com/boson-go/boson/conformance/internal/faulty"
	"github.com/boson-go/boson/core"
)

// faultEnv selects a deliberately faulty wrapper around the mem backend for
// TestMem; TestSuiteCatchesFaultyBackends sets it in a subprocess.
const faultEnv = "BOSON_CONFORMANCE_FAULT"

// memHarness runs the suite on the in-memory backend, optionally wrapped
// in the named fault.
func memHarness(fault string) conformance.Harness {
	h := conformance.Harness{
		Name: "mem",
		New: func(t testing.TB, opts conformance.Options) core.QueueBackend {
			b := mem.New(mem.Options{Clock: opts.Clock, Limits: opts.Limits})
			t.Cleanup(func() { _ = b.Close() })
			if fault == "" {
				return b
			}
			w, err := faulty.Wrap(fault, b)
			if err != nil {
				t.Fatal(err)
			}
			return w
		},
		Capabilities: conformance.Capabilities{Notify: true, Runs: true, Search: true, Tasks: true, Delete: true, AtomicBulk: true, Flow: true, Declare: true, Await: true},
	}
	if faulty.Faults[fault].TxControl {
		journalTx(&h)
	}
	return h
}

// journalTx declares TxControl on h, with the journal transactions of
// the faulty package: mem has none of its own.
func journalTx(h *conformance.Harness) {
	h.Capabilities.TxControl = true
	h.BeginTx = func(ctx context.Context, _ testing.TB, _ core.QueueBackend) (any, func() error, func() error) {
		return faulty.BeginJournal(ctx)
	}
}

// TestMemJournal runs the suite on mem wrapped in the correct journal,
// the one that the tx-* faults break, so that each of them is caught
// for its own defect.
func TestMemJournal(t *testing.T) {
	if os.Getenv(faultEnv) != "" {
		return // inside a faulty-backend subprocess
	}
	h := memHarness("")
	inner := h.New
	h.New = func(t testing.TB, opts conformance.Options) core.QueueBackend {
		return faulty.WrapJournal(inner(t, opts))
	}
	journalTx(&h)
	conformance.Run(t, h)
}

func TestMem(t *testing.T) {
	conformance.Run(t, memHarness(os.Getenv(faultEnv)))
}

func BenchmarkMem(b *testing.B) {
	conformance.Bench(b, memHarness(""))
}
