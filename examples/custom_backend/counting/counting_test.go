package counting_test

import (
	"log/slog"
	"testing"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/conformance"
	"github.com/boson-go/boson/core"
	"github.com/boson-go/boson/examples/custom_backend/counting"
)

// TestConformance holds the adapter to the contract every backend meets:
// the wrapper around mem must behave exactly as mem does.
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Name: "counting-mem",
		New: func(t testing.TB, opts conformance.Options) core.QueueBackend {
			inner := mem.New(mem.Options{Clock: opts.Clock, Limits: opts.Limits, Logger: slog.New(slog.DiscardHandler)})
			b := counting.New(inner, slog.New(slog.DiscardHandler))
			t.Cleanup(func() { _ = b.Close() })
			return b
		},
		Capabilities: conformance.Capabilities{Notify: true},
	})
}
