package natsq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go"
)

// Deletions issued by one replica while another enqueues, claims and
// completes leave every replica, and one started afterwards from the log,
// with the same state, indexes included; a worker whose job was deleted
// under it only ever learns ErrLeaseLost.
func TestDeletionsAgreeAcrossReplicas(t *testing.T) {
	nc := internalServer(t)
	nc2, err := nats.Connect(nc.ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := Options{Namespace: "deletions", CompactEvery: -1}
	worker, err := New(ctx, nc, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	admin, err := New(ctx, nc2, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	var wg sync.WaitGroup
	errc := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < 60; i++ {
			var reqs []core.EnqueueRequest
			for n := 0; n < 4; n++ {
				reqs = append(reqs, core.EnqueueRequest{Queue: fmt.Sprint("q", n%2), Task: "t", IdempotencyKey: fmt.Sprint(i, "-", n)})
			}
			if _, err := worker.Enqueue(ctx, reqs); err != nil {
				errc <- err
				return
			}
			jobs, err := worker.Claim(ctx, core.ClaimRequest{Queue: fmt.Sprint("q", i%2), WorkerID: "w", Limit: 3, LeaseTTL: time.Minute})
			if err != nil {
				errc <- err
				return
			}
			for _, j := range jobs {
				if _, err := worker.SaveCheckpoint(ctx, j.Lease, "s", []byte("v")); err != nil && !errors.Is(err, core.ErrLeaseLost) {
					errc <- fmt.Errorf("checkpoint: %w", err)
					return
				}
				errs, err := worker.Complete(ctx, []core.Completion{{Lease: j.Lease, Result: []byte("r")}})
				if err != nil || errs[0] != nil && !errors.Is(errs[0], core.ErrLeaseLost) {
					errc <- fmt.Errorf("complete: %v %v", err, errs)
					return
				}
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 40; i++ {
			if i%4 == 3 {
				if _, err := admin.DeleteQueue(ctx, core.DeleteQueueRequest{Queue: "q1", Limit: 5}); err != nil {
					errc <- err
					return
				}
				continue
			}
			page, err := admin.ListJobs(ctx, core.JobFilter{Queue: "q0", Limit: 3, Desc: true})
			if err != nil {
				errc <- err
				return
			}
			for _, j := range page.Jobs {
				if err := admin.DeleteJob(ctx, j.ID, i%2 == 0); err != nil && !errors.Is(err, core.ErrNotFound) && !errors.Is(err, core.ErrInvalidState) {
					errc <- fmt.Errorf("delete: %w", err)
					return
				}
			}
		}
	}()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	fresh, err := New(ctx, nc, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	for _, b := range []*Backend{worker, admin, fresh} {
		if err := b.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	worker.mu.RLock()
	want := digest(worker.st)
	worker.mu.RUnlock()
	if want == "" {
		t.Fatal("the worker holds nothing")
	}
	for name, b := range map[string]*Backend{"admin": admin, "fresh": fresh} {
		b.mu.RLock()
		got := digest(b.st)
		b.mu.RUnlock()
		if got != want {
			t.Fatalf("the %s replica differs from the worker", name)
		}
	}
	// Deleting q1 to the end leaves every replica without it.
	for {
		res, err := admin.DeleteQueue(ctx, core.DeleteQueueRequest{Queue: "q1", Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		if res.Done {
			break
		}
	}
	if err := worker.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := worker.CountJobs(ctx, core.JobFilter{Queue: "q1"})
	if err != nil || len(n) != 0 {
		t.Fatalf("q1 after its deletion: %v %v", n, err)
	}
	worker.mu.RLock()
	_, held := worker.st.qids["q1"]
	worker.mu.RUnlock()
	if held {
		t.Fatal("the id index still names q1")
	}
}
