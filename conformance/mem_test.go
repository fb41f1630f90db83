package conformance_test

import (
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
	return conformance.Harness{
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
		Capabilities: conformance.Capabilities{Notify: true, Runs: true, Search: true, Tasks: true, Delete: true},
	}
}

func TestMem(t *testing.T) {
	conformance.Run(t, memHarness(os.Getenv(faultEnv)))
}

func BenchmarkMem(b *testing.B) {
	conformance.Bench(b, memHarness(""))
}
