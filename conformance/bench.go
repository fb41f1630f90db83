package conformance

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// Bench runs the standard benchmarks against the backend that h describes,
// on the system clock:
//
//   - Enqueue/single: one job per Enqueue call.
//   - Enqueue/batch100: 100 jobs per Enqueue call.
//   - ClaimComplete/single: claim one job and complete it, per job.
//   - ClaimComplete/batch100: claim 100 jobs and complete them in one call.
//   - EndToEnd: producers enqueue while workers claim and complete, with a
//     few goroutines each.
//   - BulkCancel/native, BulkCancel/perJob: core.Bulk cancels queued jobs
//     in steps of 1,000, through the backend's own core.BulkActor where
//     it has one, and through one Cancel call per job (backends that
//     search jobs only).
//   - FlowClaim/saturated10, FlowClaim/saturated10000, FlowDrain/perKeyLimit
//     and FlowDrain/noLimit, when the harness declares Flow: the cost of a
//     claim beside many saturated limit keys, and of an unsaturated per-key
//     limit on a drain (see the flow benchmarks' file).
//   - Await/fanIn1000, Await/completeWaited and Await/completeUnwaited,
//     when the harness declares Await: the time from a wait on 1,000
//     children to the claim of the woken job, and the cost per child of
//     Complete with and without a wait on it (see the fan-in benchmarks'
//     file).
//
// Each reports jobs/s beside ns/op; b.N counts jobs, so ns/op is the time
// per job. Names are stable, so benchstat can compare runs.
func Bench(b *testing.B, h Harness) {
	b.Run("Enqueue/single", func(b *testing.B) { benchEnqueue(b, h, 1) })
	b.Run("Enqueue/batch100", func(b *testing.B) { benchEnqueue(b, h, 100) })
	b.Run("ClaimComplete/single", func(b *testing.B) { benchClaimComplete(b, h, 1) })
	b.Run("ClaimComplete/batch100", func(b *testing.B) { benchClaimComplete(b, h, 100) })
	b.Run("EndToEnd", func(b *testing.B) { benchEndToEnd(b, h) })
	b.Run("BulkCancel/native", func(b *testing.B) { benchBulkCancel(b, h, false) })
	b.Run("BulkCancel/perJob", func(b *testing.B) { benchBulkCancel(b, h, true) })
	if h.Capabilities.Flow {
		benchFlow(b, h)
	}
	if h.Capabilities.Await {
		benchAwait(b, h)
	}
}

func benchBackend(b *testing.B, h Harness) core.QueueBackend {
	b.Helper()
	return h.New(b, Options{Clock: core.SystemClock{}})
}

func benchReqs(n int) []core.EnqueueRequest {
	reqs := make([]core.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = core.EnqueueRequest{Queue: "bench", Task: "bench", Payload: []byte(`{"n":1}`)}
	}
	return reqs
}

// reportJobs reports jobs per second over the timed part of the benchmark.
func reportJobs(b *testing.B, jobs int) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(jobs)/s, "jobs/s")
	}
}

// fill enqueues n jobs in batches of up to 500.
func fill(b *testing.B, be core.QueueBackend, n int) {
	b.Helper()
	ctx := context.Background()
	for n > 0 {
		size := min(n, 500)
		if _, err := be.Enqueue(ctx, benchReqs(size)); err != nil {
			b.Fatalf("Enqueue: %v", err)
		}
		n -= size
	}
}

func benchEnqueue(b *testing.B, h Harness, batch int) {
	be := benchBackend(b, h)
	ctx := context.Background()
	reqs := benchReqs(batch)
	b.ResetTimer()
	jobs := 0
	for jobs < b.N {
		n := min(batch, b.N-jobs)
		if _, err := be.Enqueue(ctx, reqs[:n]); err != nil {
			b.Fatalf("Enqueue: %v", err)
		}
		jobs += n
	}
	b.StopTimer()
	reportJobs(b, jobs)
}

func benchClaimComplete(b *testing.B, h Harness, batch int) {
	be := benchBackend(b, h)
	ctx := context.Background()
	fill(b, be, b.N)
	b.ResetTimer()
	done := 0
	for done < b.N {
		jobs, err := be.Claim(ctx, core.ClaimRequest{Queue: "bench", WorkerID: "bench", Limit: min(batch, b.N-done), LeaseTTL: time.Minute})
		if err != nil {
			b.Fatalf("Claim: %v", err)
		}
		if len(jobs) == 0 {
			b.Fatalf("Claim found no job after %d of %d", done, b.N)
		}
		items := make([]core.Completion, len(jobs))
		for i, j := range jobs {
			items[i] = core.Completion{Lease: j.Lease}
		}
		errs, err := be.Complete(ctx, items)
		if err != nil {
			b.Fatalf("Complete: %v", err)
		}
		for _, err := range errs {
			if err != nil {
				b.Fatalf("Complete: %v", err)
			}
		}
		done += len(jobs)
	}
	b.StopTimer()
	reportJobs(b, done)
}

// End-to-end shape: producers enqueue batches of endToEndBatch, workers
// claim up to endToEndBatch and complete them in one call.
const (
	endToEndProducers = 2
	endToEndWorkers   = 4
	endToEndBatch     = 10
)

func benchEndToEnd(b *testing.B, h Harness) {
	be := benchBackend(b, h)
	ctx := context.Background()
	var produced, completed atomic.Int64
	var failed atomic.Bool
	total := int64(b.N)
	errc := make(chan error, endToEndProducers+endToEndWorkers)
	var wg sync.WaitGroup
	b.ResetTimer()
	for p := 0; p < endToEndProducers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := int64(endToEndBatch)
				start := produced.Add(n) - n
				if start >= total {
					return
				}
				n = min(n, total-start)
				if _, err := be.Enqueue(ctx, benchReqs(int(n))); err != nil {
					errc <- fmt.Errorf("enqueue: %w", err)
					failed.Store(true)
					return
				}
			}
		}()
	}
	for w := 0; w < endToEndWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := fmt.Sprintf("w%d", w)
			for completed.Load() < total && !failed.Load() {
				jobs, err := be.Claim(ctx, core.ClaimRequest{Queue: "bench", WorkerID: worker, Limit: endToEndBatch, LeaseTTL: time.Minute})
				if err != nil {
					errc <- fmt.Errorf("claim: %w", err)
					failed.Store(true)
					return
				}
				if len(jobs) == 0 {
					// Producers are behind; poll again.
					runtime.Gosched()
					continue
				}
				items := make([]core.Completion, len(jobs))
				for i, j := range jobs {
					items[i] = core.Completion{Lease: j.Lease}
				}
				if _, err := be.Complete(ctx, items); err != nil {
					errc <- fmt.Errorf("complete: %w", err)
					failed.Store(true)
					return
				}
				completed.Add(int64(len(jobs)))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errc)
	for err := range errc {
		b.Fatal(err)
	}
	reportJobs(b, int(completed.Load()))
}
