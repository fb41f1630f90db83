package natsq_test

import (
	"context"
	"fmt"
	"os"
	"time"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Example enqueues a job, claims it and completes it. It starts a NATS
// server in the process; in production, connect to your own.
func Example() {
	dir, _ := os.MkdirTemp("", "natsq-example")
	defer os.RemoveAll(dir)
	srv, _ := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	go srv.Start()
	defer srv.Shutdown()
	srv.ReadyForConnections(10 * time.Second)

	ctx := context.Background()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	b, err := natsq.New(ctx, nc, natsq.Options{Namespace: "example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()

	if _, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "mail", Task: "send", Payload: []byte(`{"to":"ada"}`)}}); err != nil {
		fmt.Println(err)
		return
	}
	jobs, _ := b.Claim(ctx, core.ClaimRequest{Queue: "mail", WorkerID: "worker-1", Limit: 10, LeaseTTL: time.Minute})
	for _, j := range jobs {
		fmt.Printf("claimed %s %s attempt %d token %d\n", j.Task, j.Payload, j.Attempt, j.Lease.Token)
		errs, _ := b.Complete(ctx, []core.Completion{{Lease: j.Lease, Result: []byte(`"sent"`)}})
		fmt.Println("complete:", errs[0])
		done, _ := b.GetJob(ctx, j.ID)
		fmt.Println(done.State, string(done.Result))
	}
	// Output:
	// claimed send {"to":"ada"} attempt 1 token 1
	// complete: <nil>
	// succeeded "sent"
}

// Example_fencing shows a stale lease being refused once the job was
// rescued and claimed again.
func Example_fencing() {
	dir, _ := os.MkdirTemp("", "natsq-example")
	defer os.RemoveAll(dir)
	srv, _ := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	go srv.Start()
	defer srv.Shutdown()
	srv.ReadyForConnections(10 * time.Second)
	nc, _ := nats.Connect(srv.ClientURL())
	defer nc.Close()

	ctx := context.Background()
	clock := core.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	b, err := natsq.New(ctx, nc, natsq.Options{Namespace: "fencing", DecisionClock: clock})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	_, _ = b.Enqueue(ctx, []core.EnqueueRequest{{Task: "report"}})
	first, _ := b.Claim(ctx, core.ClaimRequest{Queue: "default", WorkerID: "slow", Limit: 1, LeaseTTL: time.Minute})
	clock.Advance(2 * time.Minute) // the slow worker's lease expires
	res, _ := b.Rescue(ctx, core.RescueRequest{Limit: 100})
	second, _ := b.Claim(ctx, core.ClaimRequest{Queue: "default", WorkerID: "fast", Limit: 1, LeaseTTL: time.Minute})
	errs, _ := b.Complete(ctx, []core.Completion{{Lease: first[0].Lease}, {Lease: second[0].Lease}})
	fmt.Println("requeued:", res.Requeued)
	fmt.Println("stale token", first[0].Lease.Token, "->", errs[0] != nil)
	fmt.Println("fresh token", second[0].Lease.Token, "->", errs[1])
	// Output:
	// requeued: 1
	// stale token 1 -> true
	// fresh token 2 -> <nil>
}
