package redisq

import (
	"strings"
	"testing"

	"github.com/boson-go/boson/conformance"
	"github.com/boson-go/boson/conformance/testenv"
	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// harness runs the suite on backends over client, each with its own prefix
// and with the PollInterval and Scripts of base. A PollInterval of -1
// proves that pub/sub alone delivers the signals; 0 keeps the production
// fallback tick, which makes up for a signal lost on the way (core.Notifier
// allows that).
//
// Flow control and fan-in are declared unless the client is a cluster with
// a slot per queue (no OneSlot), where the task limits that span queues are
// refused and so are waits across queues (the suite's children are in
// other queues than their parents): there the backend runs the suite
// without its core.Awaiter (see sameSlotOnly), and TestAwaitStore covers
// waits within one queue.
func harness(name string, base Options, client func(t testing.TB) redis.UniversalClient) conformance.Harness {
	spans := base.OneSlot || !strings.Contains(name, "cluster")
	return conformance.Harness{
		Name: name,
		New: func(t testing.TB, opts conformance.Options) core.QueueBackend {
			b := newBackend(t, client(t), Options{Clock: opts.Clock, Limits: opts.Limits, PollInterval: base.PollInterval, Scripts: base.Scripts, OneSlot: base.OneSlot})
			if !spans {
				return sameSlotOnly{Backend: b}
			}
			return b
		},
		Capabilities:  conformance.Capabilities{Notify: true, Runs: true, Search: true, Tasks: true, Delete: true, Flow: spans, Declare: true, Await: spans, AtomicBulk: true},
		FlowExactJobs: exactJobs,
	}
}

// sameSlotOnly is a Backend without its core.Awaiter methods: the fields
// hide them, every other method is the Backend's.
type sameSlotOnly struct {
	*Backend
	AwaitJobs, JobWait struct{}
}

func TestConformanceStandalone(t *testing.T) {
	conformance.Run(t, harness("redis", Options{PollInterval: -1}, func(t testing.TB) redis.UniversalClient { return standaloneClient(t) }))
}

// TestConformanceStandaloneEval runs the suite with the scripts sent by
// EVALSHA, as on a server without Functions; under the race detector it
// runs in a child built without it, since the Go code it runs is the
// standalone harness's but for the call that sends a script.
func TestConformanceStandaloneEval(t *testing.T) {
	t.Parallel()
	if testenv.WithoutRace(t) {
		return
	}
	conformance.Run(t, harness("redis-eval", Options{PollInterval: -1, Scripts: ScriptsEval}, func(t testing.TB) redis.UniversalClient { return standaloneClient(t) }))
}

func BenchmarkConformance(b *testing.B) {
	b.Run("standalone", func(b *testing.B) {
		conformance.Bench(b, harness("redis", Options{PollInterval: -1}, func(t testing.TB) redis.UniversalClient { return standaloneClient(t) }))
	})
	b.Run("cluster", func(b *testing.B) {
		conformance.Bench(b, harness("redis-cluster", Options{}, func(t testing.TB) redis.UniversalClient { return clusterClient(t) }))
	})
}
