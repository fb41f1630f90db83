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

// BenchmarkBulkDelete measures core.Bulk deleting b.N queued jobs in steps
// of 1,000 (one delete_job command per job, as Bulk issues them) while a
// worker keeps claiming and completing jobs of the same queue.
//
//	go test -run '^$' -bench BulkDelete -benchtime 100000x ./
func BenchmarkBulkDelete(b *testing.B) {
	nc := connect(b, embeddedURL(b))
	be := newBackend(b, nc, natsq.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for left := b.N; left > 0; {
		n := min(left, 1000)
		reqs := make([]core.EnqueueRequest, n)
		for i := range reqs {
			reqs[i] = core.EnqueueRequest{Queue: "bulk", Task: "bulk", Payload: []byte(`{"n":1}`)}
		}
		if _, err := be.Enqueue(ctx, reqs); err != nil {
			b.Fatal(err)
		}
		left -= n
	}
	drained := make(chan int)
	go func() {
		n := 0
		defer func() { drained <- n }()
		for ctx.Err() == nil {
			jobs, err := be.Claim(ctx, core.ClaimRequest{Queue: "bulk", WorkerID: "w", Limit: 10, LeaseTTL: time.Minute})
			if err != nil || len(jobs) == 0 {
				time.Sleep(time.Millisecond)
				continue
			}
			items := make([]core.Completion, len(jobs))
			for i, j := range jobs {
				items[i] = core.Completion{Lease: j.Lease}
			}
			if _, err := be.Complete(ctx, items); err == nil {
				n += len(jobs)
			}
		}
	}()
	b.ResetTimer()
	req := core.BulkRequest{Action: core.BulkDelete, Search: core.JobSearch{JobFilter: core.JobFilter{Queue: "bulk"}}, Limit: 1000}
	changed := 0
	for {
		res, err := core.Bulk(ctx, be, req)
		if err != nil {
			b.Fatal(err)
		}
		changed += res.Changed
		if res.Done {
			break
		}
		req.Cursor = res.Next
	}
	b.StopTimer()
	cancel()
	worked := <-drained
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(changed)/s, "deleted/s")
	}
	b.ReportMetric(float64(worked), "completed")
}
