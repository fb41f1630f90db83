package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/conformance"
	"github.com/boson-go/boson/core"
)

// A harness for the in-memory backend, the shape every adapter follows:
// New builds an isolated backend on the suite's clock and limits and
// registers its cleanup; Capabilities declares the optional interfaces.
// A test then calls conformance.Run(t, h), a benchmark conformance.Bench(b, h).
func ExampleHarness() {
	h := conformance.Harness{
		Name: "mem",
		New: func(t testing.TB, opts conformance.Options) core.QueueBackend {
			b := mem.New(mem.Options{Clock: opts.Clock, Limits: opts.Limits})
			t.Cleanup(func() { _ = b.Close() })
			return b
		},
		Capabilities: conformance.Capabilities{Notify: true},
	}

	// What Run checks for an undeclared capability:
	b := mem.New(mem.Options{})
	defer b.Close()
	_, err := core.EnqueueTx(context.Background(), b, nil, []core.EnqueueRequest{{Task: "t"}})
	fmt.Println(h.Name, "notify:", h.Capabilities.Notify, "tx enqueue unsupported:", errors.Is(err, core.ErrUnsupported))
	// Output: mem notify: true tx enqueue unsupported: true
}
