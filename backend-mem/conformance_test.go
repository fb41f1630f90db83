package mem_test

import (
	"testing"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/conformance"
	"github.com/boson-go/boson/core"
)

// harness runs the shared suite on a fresh in-memory backend per case.
var harness = conformance.Harness{
	Name: "mem",
	New: func(t testing.TB, opts conformance.Options) core.QueueBackend {
		b := mem.New(mem.Options{Clock: opts.Clock, Limits: opts.Limits})
		t.Cleanup(func() { _ = b.Close() })
		return b
	},
	Capabilities: conformance.Capabilities{Notify: true, Runs: true, Search: true, Tasks: true, Delete: true, AtomicBulk: true, Flow: true, Declare: true, Await: true},
}

func TestConformance(t *testing.T) { conformance.Run(t, harness) }

func BenchmarkConformance(b *testing.B) { conformance.Bench(b, harness) }
