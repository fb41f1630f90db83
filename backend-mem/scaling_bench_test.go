package mem_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

// BenchmarkClaimScaling shows that a claim does not scan: with n due jobs
// and n jobs scheduled far ahead in the queue, one enqueue+claim+complete
// cycle costs about the same at every n (O(log n)).
func BenchmarkClaimScaling(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		// One backend per size, filled once: the claim cycles below leave
		// the number of waiting jobs unchanged, so every b.N probe of the
		// sub-benchmark can share it.
		ctx := context.Background()
		be := mem.New(mem.Options{})
		for i := 0; i < n; i += 1000 {
			due := make([]core.EnqueueRequest, 1000)
			later := make([]core.EnqueueRequest, 1000)
			for k := range due {
				due[k] = core.EnqueueRequest{Queue: "q", Task: "t", Priority: k % 10}
				later[k] = core.EnqueueRequest{Queue: "q", Task: "t", RunAt: time.Now().Add(time.Hour)}
			}
			if _, err := be.Enqueue(ctx, due); err != nil {
				b.Fatal(err)
			}
			if _, err := be.Enqueue(ctx, later); err != nil {
				b.Fatal(err)
			}
		}
		one := []core.EnqueueRequest{{Queue: "q", Task: "t", Priority: 5}}
		b.Run(fmt.Sprintf("jobs=%d", 2*n), func(b *testing.B) {
			for range b.N {
				if _, err := be.Enqueue(ctx, one); err != nil {
					b.Fatal(err)
				}
				jobs, err := be.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 1, LeaseTTL: time.Minute})
				if err != nil || len(jobs) != 1 {
					b.Fatal(len(jobs), err)
				}
				if _, err := be.Complete(ctx, []core.Completion{{Lease: jobs[0].Lease}}); err != nil {
					b.Fatal(err)
				}
			}
		})
		_ = be.Close()
	}
}
