// Package faulty wraps a correct backend so that it breaks one rule of the
// contract on purpose. The conformance suite runs against each wrapper to
// show that it notices the fault.
package faulty

import (
	"context"
	"fmt"
	"sort"

	"github.com/boson-go/boson/core"
)

// Fault is one deliberate defect.
type Fault struct {
	// Name selects the fault.
	Name string
	// What describes the defect.
	What string
	// CaughtBy names suite cases (relative to the suite's root test) that
	// must fail against the fault.
	CaughtBy []string
	wrap     func(b core.QueueBackend) core.QueueBackend
}

// Faults lists every fault, by name.
var Faults = map[string]Fault{}

func register(f Fault) { Faults[f.Name] = f }

// Names returns the fault names in order.
func Names() []string {
	names := make([]string, 0, len(Faults))
	for n := range Faults {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Wrap returns b with the named fault, or an error for an unknown name.
func Wrap(name string, b core.QueueBackend) (core.QueueBackend, error) {
	f, ok := Faults[name]
	if !ok {
		return nil, fmt.Errorf("faulty: unknown fault %q", name)
	}
	return f.wrap(b), nil
}

// base forwards everything to the wrapped backend, including
// notifications; each fault overrides what it breaks.
type base struct {
	core.QueueBackend
}

// Subscribe forwards to the wrapped backend's notifications.
func (b base) Subscribe(queue string) (<-chan struct{}, func()) {
	sig, stop, ok := core.SubscribeQueue(b.QueueBackend, queue)
	if !ok {
		return nil, func() {}
	}
	return sig, stop
}

// currentToken reads the token a job is running under, or 0.
func currentToken(ctx context.Context, b core.QueueBackend, l core.Lease) core.Lease {
	j, err := b.GetJob(ctx, l.JobID)
	if err == nil && j.Lease.Token > 0 {
		l.Token = j.Lease.Token
	}
	return l
}
