package mem_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

// BenchmarkRawCeiling is the store's raw loop, as the ceiling scenario of
// boson bench runs it: b.N jobs enqueued in batches of 1,000 from two
// goroutines, then drained by two goroutines that each claim 500 and
// complete them in one call. Besides wall time it reports the process CPU
// time per job of each phase (garbage collection included), which a busy
// machine disturbs far less than wall time.
func BenchmarkRawCeiling(b *testing.B) {
	ctx := context.Background()
	be := mem.New(mem.Options{})
	defer be.Close()
	payload := []byte(`{"seq":0}`)
	n := b.N

	b.ResetTimer()
	cpu0 := cpuTime()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reqs := make([]core.EnqueueRequest, 0, 1000)
			for {
				lo := int(next.Add(1000)) - 1000
				if lo >= n {
					return
				}
				reqs = reqs[:0]
				for i := lo; i < min(lo+1000, n); i++ {
					reqs = append(reqs, core.EnqueueRequest{Queue: "q", Task: "t", Payload: payload})
				}
				if _, err := be.Enqueue(ctx, reqs); err != nil {
					panic(err)
				}
			}
		}()
	}
	wg.Wait()
	cpu1 := cpuTime()
	var done atomic.Int64
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := fmt.Sprintf("w%d", w)
			items := make([]core.Completion, 0, 500)
			for done.Load() < int64(n) {
				jobs, err := be.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: worker, Limit: 500, LeaseTTL: 10 * time.Minute})
				if err != nil {
					panic(err)
				}
				if len(jobs) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				items = items[:0]
				for _, j := range jobs {
					items = append(items, core.Completion{Lease: j.Lease})
				}
				errs, err := be.Complete(ctx, items)
				if err != nil {
					panic(err)
				}
				for _, err := range errs {
					if err != nil {
						panic(err)
					}
				}
				done.Add(int64(len(items)))
			}
		}()
	}
	wg.Wait()
	cpu2 := cpuTime()
	b.StopTimer()
	b.ReportMetric(float64(cpu1-cpu0)/float64(n), "enqueue-cpu-ns/job")
	b.ReportMetric(float64(cpu2-cpu1)/float64(n), "claim+complete-cpu-ns/job")
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
