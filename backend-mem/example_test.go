package mem_test

import (
	"context"
	"fmt"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

// Example enqueues a job, claims it under a lease and completes it with a
// result: the life of a job in three calls.
func Example() {
	ctx := context.Background()
	b := mem.New(mem.Options{}) // system clock, default limits
	defer b.Close()

	res, err := b.Enqueue(ctx, []core.EnqueueRequest{{
		Queue:   "emails",
		Task:    "send_welcome",
		Payload: []byte(`{"to":"ada@example.com"}`),
	}})
	if err != nil {
		panic(err)
	}
	fmt.Println("enqueued:", res[0].Job.State)

	jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "emails", WorkerID: "worker-1", Limit: 10, LeaseTTL: 30 * time.Second})
	if err != nil {
		panic(err)
	}
	job := jobs[0]
	fmt.Printf("claimed: %s attempt %d token %d\n", job.Task, job.Attempt, job.Lease.Token)

	// The lease is the fencing token: only its holder may finish the job.
	errs, err := b.Complete(ctx, []core.Completion{{Lease: job.Lease, Result: []byte(`"sent"`)}})
	if err != nil || errs[0] != nil {
		panic(fmt.Sprint(err, errs))
	}

	done, _ := b.GetJob(ctx, job.ID)
	fmt.Println("finished:", done.State, string(done.Result))
	// Output:
	// enqueued: queued
	// claimed: send_welcome attempt 1 token 1
	// finished: succeeded "sent"
}
