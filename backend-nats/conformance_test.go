package natsq_test

import (
	"testing"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/boson-go/boson/conformance"
	"github.com/boson-go/boson/conformance/testenv"
	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go"
)

// harness returns the conformance harness for backends on the server at
// url, each on its own namespace that is deleted when its test ends.
func harness(name string, nc *nats.Conn, replicas int) conformance.Harness {
	return harnessWith(name, nc, natsq.Options{Replicas: replicas})
}

// harnessWith is harness with more options; the suite's clock and limits
// are set on top of base.
func harnessWith(name string, nc *nats.Conn, base natsq.Options) conformance.Harness {
	return conformance.Harness{
		Name: name,
		New: func(t testing.TB, o conformance.Options) core.QueueBackend {
			opts := base
			opts.DecisionClock, opts.Limits = o.Clock, o.Limits
			return newBackend(t, nc, opts)
		},
		Capabilities:  conformance.Capabilities{Notify: true, Runs: true, Search: true, Tasks: true, Delete: true, AtomicBulk: true, Flow: true, Declare: true, Await: true},
		FlowExactJobs: exactJobs,
	}
}

// TestConformanceEmbedded runs the suite against a current server started
// inside the test process.
func TestConformanceEmbedded(t *testing.T) {
	nc := connect(t, embeddedURL(t))
	conformance.Run(t, harness("nats-embedded", nc, 1))
}

// TestConformanceCompacting runs the suite while every backend takes a
// snapshot and purges its log every few commands, in the background.
func TestConformanceCompacting(t *testing.T) {
	nc := connect(t, embeddedURL(t))
	conformance.Run(t, variant(harnessWith("nats-compacting", nc, natsq.Options{CompactEvery: 5, CompactKeep: 1})))
}

// TestConformanceServer runs the suite against the machine's server
// (BOSON_TEST_NATS_URL, else 127.0.0.1:4222; Debian ships 2.9). The store's
// code is the embedded harness's, so under the race detector it runs in a
// child built without it.
func TestConformanceServer(t *testing.T) {
	t.Parallel()
	if testenv.WithoutRace(t) {
		return
	}
	nc := connect(t, externalURL(t))
	t.Logf("server version %s", nc.ConnectedServerVersion())
	conformance.Run(t, harness("nats-server", nc, 1))
}

// variant is h with the FlowExact size of a harness that varies one part
// of the store.
func variant(h conformance.Harness) conformance.Harness {
	h.FlowExactJobs = variantExactJobs
	return h
}

// runConformance runs the suite. It is a seam so that slower servers can
// run it the same way.
func runConformance(t *testing.T, h conformance.Harness) { conformance.Run(t, h) }
