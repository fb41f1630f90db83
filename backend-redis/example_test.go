package redisq_test

import (
	"context"
	"fmt"
	"os"
	"time"

	redisq "github.com/boson-go/boson/backend-redis"
	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// Enqueue a job, claim it as a worker and complete it.
func Example() {
	ctx := context.Background()
	addr := "redis://127.0.0.1:6379/0"
	if u := os.Getenv("BOSON_TEST_REDIS_URL"); u != "" {
		addr = u
	}
	opt, err := redis.ParseURL(addr)
	if err != nil {
		panic(err)
	}
	client := redis.NewClient(opt)
	defer client.Close()

	prefix := "example" + core.NewID(time.Now())[16:]
	backend, err := redisq.New(client, redisq.Options{Prefix: prefix})
	if err != nil {
		panic(err)
	}
	defer backend.Close()
	defer func() { // remove the example's keys
		iter := client.Scan(ctx, 0, "{"+prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			client.Del(ctx, iter.Val())
		}
	}()

	res, err := backend.Enqueue(ctx, []core.EnqueueRequest{{Queue: "mail", Task: "send", Payload: []byte(`{"to":"ada"}`)}})
	if err != nil {
		panic(err)
	}
	fmt.Println("enqueued:", res[0].Job.State)

	jobs, err := backend.Claim(ctx, core.ClaimRequest{Queue: "mail", WorkerID: "worker-1", Limit: 10, LeaseTTL: time.Minute})
	if err != nil {
		panic(err)
	}
	fmt.Println("claimed:", jobs[0].Task, string(jobs[0].Payload), "attempt", jobs[0].Attempt, "token", jobs[0].Lease.Token)

	errs, err := backend.Complete(ctx, []core.Completion{{Lease: jobs[0].Lease, Result: []byte("ok")}})
	if err != nil || errs[0] != nil {
		panic(fmt.Sprint(err, errs))
	}
	job, err := backend.GetJob(ctx, jobs[0].ID)
	if err != nil {
		panic(err)
	}
	fmt.Println("now:", job.State, string(job.Result))
	// Output:
	// enqueued: queued
	// claimed: send {"to":"ada"} attempt 1 token 1
	// now: succeeded ok
}
