package natsq_test

import (
	"context"
	"testing"
	"time"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/boson-go/boson/conformance"
	"github.com/boson-go/boson/core"
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

// BenchmarkReplay measures how fast a new replica catches up: the log holds
// b.N single-job lifecycles (enqueue, claim, complete: three commands
// each), and the timed part is natsq.New replaying them.
func BenchmarkReplay(b *testing.B) {
	nc := connect(b, embeddedURL(b))
	ns := namespace("replay")
	w := newBackend(b, nc, natsq.Options{Namespace: ns})
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		if _, err := w.Enqueue(ctx, []core.EnqueueRequest{{Task: "r", Payload: []byte(`{"n":1}`)}}); err != nil {
			b.Fatal(err)
		}
		jobs, err := w.Claim(ctx, core.ClaimRequest{Queue: "default", WorkerID: "w", Limit: 1, LeaseTTL: time.Minute})
		if err != nil || len(jobs) != 1 {
			b.Fatalf("claim: %v", err)
		}
		if _, err := w.Complete(ctx, []core.Completion{{Lease: jobs[0].Lease}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	r, err := natsq.New(ctx, nc, natsq.Options{Namespace: ns})
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	r.Close()
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(3*b.N)/s, "commands/s")
	}
}
