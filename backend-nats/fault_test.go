package natsq_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go"
)

// A server restart gives wrapped errors while the server is away, and work
// resumes, with nothing lost, once it is back on the same store.
func TestServerRestart(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, 0)
	port := s.Addr().(interface{ String() string }).String()
	port = port[strings.LastIndex(port, ":")+1:]
	url := s.ClientURL()
	reconnected := make(chan struct{}, 16)
	nc := connect(t, url, nats.ReconnectHandler(func(*nats.Conn) { reconnected <- struct{}{} }))
	clock := core.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	ns := namespace("restart")
	ctx := context.Background()
	b, err := natsq.New(ctx, nc, natsq.Options{Namespace: ns, DecisionClock: clock, RequestTimeout: 500 * time.Millisecond, PublishAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	before, err := b.Enqueue(ctx, []core.EnqueueRequest{{Task: "a"}, {Task: "b"}, {Task: "c"}})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := b.Claim(ctx, core.ClaimRequest{Queue: "default", WorkerID: "w", Limit: 1, LeaseTTL: time.Minute})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %d", err, len(claimed))
	}

	s.Shutdown()
	s.WaitForShutdown()
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := b.Enqueue(short, []core.EnqueueRequest{{Task: "d"}}); err == nil || !strings.HasPrefix(err.Error(), "natsq:") {
		t.Fatalf("enqueue with the server down: %v", err)
	}
	if _, err := b.Complete(short, []core.Completion{{Lease: claimed[0].Lease}}); err == nil {
		t.Fatal("complete with the server down succeeded")
	}
	// Reads answer from the replica while the server is away.
	if j, err := b.GetJob(ctx, before[2].Job.ID); err != nil || j.State != core.StateQueued {
		t.Fatalf("read with the server down: %v %v", j.State, err)
	}

	var portNum int
	for _, c := range port {
		portNum = portNum*10 + int(c-'0')
	}
	s2 := startServer(t, dir, portNum)
	defer s2.Shutdown()
	select {
	case <-reconnected:
	case <-time.After(30 * time.Second):
		t.Fatal("client did not reconnect")
	}
	// The server needs a moment to recover its streams; the first commands
	// may still fail, with wrapped errors, until it has.
	var res []core.EnqueueResult
	for attempt := 0; ; attempt++ {
		res, err = b.Enqueue(ctx, []core.EnqueueRequest{{Task: "e"}})
		if err == nil {
			break
		}
		if attempt == 50 || errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("enqueue after restart: %v", err)
		}
	}
	// Whatever the first Complete did, the lease is either completed or still held.
	errs, err := b.Complete(ctx, []core.Completion{{Lease: claimed[0].Lease}})
	if err != nil {
		t.Fatalf("complete after restart: %v", err)
	}
	if errs[0] != nil && !errors.Is(errs[0], core.ErrLeaseLost) {
		t.Fatalf("complete item: %v", errs[0])
	}
	jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "default", WorkerID: "w", Limit: 10, LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, j := range jobs {
		ids[j.ID] = true
	}
	if !ids[before[1].Job.ID] || !ids[before[2].Job.ID] || !ids[res[0].Job.ID] {
		t.Fatalf("after restart claimed %d jobs, want the two left and the new one", len(jobs))
	}
	// A fresh replica replays the same history from the restarted store.
	fresh, err := natsq.New(ctx, connect(t, url), natsq.Options{Namespace: ns, DecisionClock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	n, _ := fresh.CountJobs(ctx, core.JobFilter{})
	m, _ := b.CountJobs(ctx, core.JobFilter{})
	if n[core.StateRunning] != m[core.StateRunning] || n[core.StateSucceeded] != m[core.StateSucceeded] || n[core.StateQueued] != m[core.StateQueued] {
		t.Fatalf("replicas disagree after restart: %v vs %v", n, m)
	}
}

// A connection closed under the backend gives wrapped errors, not panics.
func TestConnectionClosed(t *testing.T) {
	url := embeddedURL(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b := newBackend(t, connect(t, url), natsq.Options{})
	ns := namespace("closed")
	b2, err := natsq.New(ctx, nc, natsq.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer natsq.DeleteNamespace(ctx, connect(t, url), ns)
	defer b2.Close()
	nc.Close()
	if _, err := b2.Enqueue(ctx, []core.EnqueueRequest{{Task: "x"}}); err == nil || !strings.HasPrefix(err.Error(), "natsq:") {
		t.Fatalf("enqueue on a closed connection: %v", err)
	}
	if err := b2.Sync(ctx); err == nil {
		t.Fatal("sync on a closed connection succeeded")
	}
	if _, err := b.Enqueue(ctx, []core.EnqueueRequest{{Task: "x"}}); err != nil {
		t.Fatalf("the other backend: %v", err)
	}
	b.Close()
	if _, err := b.Enqueue(ctx, []core.EnqueueRequest{{Task: "x"}}); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}
