package redisq

import (
	"testing"
	"time"

	"github.com/boson-go/boson/conformance"
	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// harness runs the suite on backends over client, each with its own prefix.
// poll is the backends' PollInterval: -1 proves that pub/sub alone delivers
// the signals; 0 keeps the production fallback tick, which makes up for a
// signal lost on the way (core.Notifier allows that).
func harness(name string, poll time.Duration, client func(t testing.TB) redis.UniversalClient) conformance.Harness {
	return conformance.Harness{
		Name: name,
		New: func(t testing.TB, opts conformance.Options) core.QueueBackend {
			return newBackend(t, client(t), Options{Clock: opts.Clock, Limits: opts.Limits, PollInterval: poll})
		},
		Capabilities: conformance.Capabilities{Notify: true},
	}
}

func TestConformanceStandalone(t *testing.T) {
	conformance.Run(t, harness("redis", -1, func(t testing.TB) redis.UniversalClient { return standaloneClient(t) }))
}

func BenchmarkConformance(b *testing.B) {
	b.Run("standalone", func(b *testing.B) {
		conformance.Bench(b, harness("redis", -1, func(t testing.TB) redis.UniversalClient { return standaloneClient(t) }))
	})
	b.Run("cluster", func(b *testing.B) {
		conformance.Bench(b, harness("redis-cluster", 0, func(t testing.TB) redis.UniversalClient { return clusterClient(t) }))
	})
}
