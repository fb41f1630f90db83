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
//   - BulkCancel/whileDraining: the same through the backend's own steps,
//     while a worker claims, completes and enqueues jobs of another queue
//     of the store; it also reports the worker's completed/s.
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
	b.Run("BulkCancel/whileDraining", func(b *testing.B) { benchBulkWhileDraining(b, h) })
	if h.Capabilities.Flow {
		benchFlow(b, h)
	}
	if h.Capabilities.Await {
		benchAwait(b, h)
	}
}

// benchTimed is the frame every benchmark shares. It opens a fresh backend
// of h on the system clock and runs prepare on it untimed (prepare may be
// nil); then it times run alone and reports, per second of that time, the
// count run returns under unit ("jobs" for jobs/s).
func benchTimed(b *testing.B, h Harness, unit string, prepare func(ctx context.Context, be core.QueueBackend), run func(ctx context.Context, be core.QueueBackend) int) {
	b.Helper()
	be := h.New(b, Options{Clock: core.SystemClock{}})
	ctx := context.Background()
	if prepare != nil {
		prepare(ctx, be)
	}
	b.ResetTimer()
	n := run(ctx, be)
	b.StopTimer()
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(n)/s, unit+"/s")
	}
}

// benchReq is the request of the standard benchmarks' jobs; i is unused,
// so that it serves as the req of [enqueueAll].
func benchReq(int) core.EnqueueRequest {
	return core.EnqueueRequest{Queue: "bench", Task: "bench", Payload: []byte(`{"n":1}`)}
}

func benchReqs(n int) []core.EnqueueRequest {
	reqs := make([]core.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = benchReq(i)
	}
	return reqs
}

// enqueueAll stores n jobs, req(i) the i-th, in batches of up to 500, and
// hands the result of each to stored, in order, when stored is not nil.
// It builds one batch of requests at a time.
func enqueueAll(b *testing.B, be core.QueueBackend, n int, req func(i int) core.EnqueueRequest, stored func(core.EnqueueResult)) {
	b.Helper()
	ctx := context.Background()
	for i := 0; i < n; {
		batch := make([]core.EnqueueRequest, min(n-i, 500))
		for k := range batch {
			batch[k] = req(i + k)
		}
		res, err := be.Enqueue(ctx, batch)
		if err != nil {
			b.Fatalf("Enqueue: %v", err)
		}
		if stored != nil {
			for _, r := range res {
				stored(r)
			}
		}
		i += len(batch)
	}
}

// drainBench claims the jobs of queue "bench" in claims of up to batch and
// completes each claim in one call, until n are done. It fails b when a
// claim finds no job before then.
func drainBench(b *testing.B, be core.QueueBackend, n, batch int) {
	b.Helper()
	ctx := context.Background()
	for done := 0; done < n; {
		jobs, err := be.Claim(ctx, core.ClaimRequest{Queue: "bench", WorkerID: "bench", Limit: min(batch, n-done), LeaseTTL: time.Minute})
		if err != nil {
			b.Fatalf("Claim: %v", err)
		}
		if len(jobs) == 0 {
			b.Fatalf("Claim found no job after %d of %d", done, n)
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
}

func benchEnqueue(b *testing.B, h Harness, batch int) {
	reqs := benchReqs(batch)
	benchTimed(b, h, "jobs", nil, func(ctx context.Context, be core.QueueBackend) int {
		jobs := 0
		for jobs < b.N {
			n := min(batch, b.N-jobs)
			if _, err := be.Enqueue(ctx, reqs[:n]); err != nil {
				b.Fatalf("Enqueue: %v", err)
			}
			jobs += n
		}
		return jobs
	})
}

func benchClaimComplete(b *testing.B, h Harness, batch int) {
	benchTimed(b, h, "jobs", func(ctx context.Context, be core.QueueBackend) {
		enqueueAll(b, be, b.N, benchReq, nil)
	}, func(ctx context.Context, be core.QueueBackend) int {
		drainBench(b, be, b.N, batch)
		return b.N
	})
}

// End-to-end shape: producers enqueue batches of endToEndBatch, workers
// claim up to endToEndBatch and complete them in one call.
const (
	endToEndProducers = 2
	endToEndWorkers   = 4
	endToEndBatch     = 10
)

func benchEndToEnd(b *testing.B, h Harness) {
	benchTimed(b, h, "jobs", nil, func(ctx context.Context, be core.QueueBackend) int {
		return endToEnd(ctx, b, be)
	})
}

// endToEnd runs the producers and workers of EndToEnd until b.N jobs are
// completed, and returns how many were.
func endToEnd(ctx context.Context, b *testing.B, be core.QueueBackend) int {
	var produced, completed atomic.Int64
	var failed atomic.Bool
	total := int64(b.N)
	errc := make(chan error, endToEndProducers+endToEndWorkers)
	var wg sync.WaitGroup
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
	close(errc)
	for err := range errc {
		b.Fatal(err)
	}
	return int(completed.Load())
}
