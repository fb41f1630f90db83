package redisq

import (
	"testing"

	"github.com/boson-go/boson/conformance"
	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// harness runs the suite on backends over client, each with its own prefix.
func harness(name string, client func(t testing.TB) redis.UniversalClient) conformance.Harness {
	return conformance.Harness{
		Name: name,
		New: func(t testing.TB, opts conformance.Options) core.QueueBackend {
			return newBackend(t, client(t), Options{Clock: opts.Clock, Limits: opts.Limits, PollInterval: -1})
		},
		Capabilities: conformance.Capabilities{Notify: true},
	}
}

func TestConformanceStandalone(t *testing.T) {
	conformance.Run(t, harness("redis", func(t testing.TB) redis.UniversalClient { return standaloneClient(t) }))
}

func BenchmarkConformance(b *testing.B) {
	b.Run("standalone", func(b *testing.B) {
		conformance.Bench(b, harness("redis", func(t testing.TB) redis.UniversalClient { return standaloneClient(t) }))
	})
	b.Run("cluster", func(b *testing.B) {
		conformance.Bench(b, harness("redis-cluster", func(t testing.TB) redis.UniversalClient { return clusterClient(t) }))
	})
}
