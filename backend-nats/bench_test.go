package natsq_test

import (
	"testing"

	"github.com/boson-go/boson/conformance"
)

// BenchmarkConformance runs the suite's standard benchmarks against an
// embedded current server and against the machine's server.
//
//	go test -run '^$' -bench Conformance -count 5 ./ | benchstat -
func BenchmarkConformance(b *testing.B) {
	b.Run("embedded", func(b *testing.B) {
		conformance.Bench(b, harness("nats-embedded", connect(b, embeddedURL(b)), 1))
	})
	b.Run("server", func(b *testing.B) {
		conformance.Bench(b, harness("nats-server", connect(b, externalURL(b)), 1))
	})
}
