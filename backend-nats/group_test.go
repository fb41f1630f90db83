package natsq_test

import (
	"context"
	"sync"
	"testing"
	"time"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go/jetstream"
)

// Concurrent calls of one Backend share messages (group commit); every
// call still gets its own outcome, and a new replica replays the groups to
// the same state.
func TestGroupCommit(t *testing.T) {
	url := embeddedURL(t)
	nc := connect(t, url)
	ns := namespace("group")
	clock := core.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	b := newBackend(t, nc, natsq.Options{Namespace: ns, DecisionClock: clock})
	ctx := context.Background()
	const goroutines, each = 16, 20
	var wg sync.WaitGroup
	ids := make(chan string, goroutines*each)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				res, err := b.Enqueue(ctx, []core.EnqueueRequest{{Task: "g"}})
				if err != nil {
					t.Error(err)
					return
				}
				ids <- res[0].Job.ID
			}
		}()
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] {
			t.Fatalf("id %s returned twice", id)
		}
		seen[id] = true
	}
	if len(seen) != goroutines*each {
		t.Fatalf("%d results", len(seen))
	}
	js, _ := jetstream.New(nc)
	s, err := js.Stream(ctx, natsq.StreamName(ns))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := s.Info(ctx)
	t.Logf("%d enqueues in %d messages", len(seen), info.State.Msgs)
	r, err := natsq.New(ctx, connect(t, url), natsq.Options{Namespace: ns, DecisionClock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n, _ := r.CountJobs(ctx, core.JobFilter{})
	if n[core.StateQueued] != int64(len(seen)) {
		t.Fatalf("replayed %v", n)
	}
}
