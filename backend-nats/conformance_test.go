package natsq_test

import (
	"testing"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/boson-go/boson/conformance"
	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go"
)

// harness returns the conformance harness for backends on the server at
// url, each on its own namespace that is deleted when its test ends.
func harness(name string, nc *nats.Conn, replicas int) conformance.Harness {
	return conformance.Harness{
		Name: name,
		New: func(t testing.TB, o conformance.Options) core.QueueBackend {
			return newBackend(t, nc, natsq.Options{Clock: o.Clock, Limits: o.Limits, Replicas: replicas})
		},
		Capabilities: conformance.Capabilities{Notify: true},
	}
}

// TestConformanceEmbedded runs the suite against a current server started
// inside the test process.
func TestConformanceEmbedded(t *testing.T) {
	nc := connect(t, embeddedURL(t))
	conformance.Run(t, harness("nats-embedded", nc, 1))
}

// TestConformanceServer runs the suite against the machine's server
// (BOSON_TEST_NATS_URL, else 127.0.0.1:4222; Debian ships 2.9).
func TestConformanceServer(t *testing.T) {
	nc := connect(t, externalURL(t))
	t.Logf("server version %s", nc.ConnectedServerVersion())
	conformance.Run(t, harness("nats-server", nc, 1))
}

// runConformance runs the suite. It is a seam so that slower servers can
// run it the same way.
func runConformance(t *testing.T, h conformance.Harness) { conformance.Run(t, h) }
