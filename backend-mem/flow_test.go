package mem_test

import (
	"context"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

// A claim that cancels the head of a sequence past its deadline lets the
// next member in, and hands it out in the same claim.
func TestFlowSequenceHeadCancelledAtClaim(t *testing.T) {
	b, clock := newBackend(t)
	jobs := enqueue(t, b,
		core.EnqueueRequest{Task: "t", SequenceKey: "s", Cancel: core.CancellationPolicy{MaxDelay: time.Second}},
		core.EnqueueRequest{Task: "t", SequenceKey: "s"},
	)
	clock.Advance(2 * time.Second)
	got := claim(t, b, core.DefaultQueue, 10)
	if len(got) != 1 || got[0].ID != jobs[1].ID {
		t.Fatalf("claim = %v, want only the second member %s", got, jobs[1].ID)
	}
	if st := get(t, b, jobs[0].ID).State; st != core.StateCancelled {
		t.Fatalf("head is %s, want cancelled by the claim", st)
	}
	if err := mem.CheckFlow(b); err != nil {
		t.Fatal(err)
	}
}

// On the process clock, a queue whose jobs a start rate holds back is
// signalled when the next second begins, so a subscribed worker need not
// poll for them.
func TestFlowRateWindowSignals(t *testing.T) {
	ctx := context.Background()
	b := mem.New(mem.Options{})
	t.Cleanup(func() { _ = b.Close() })
	if err := b.PutTaskConfig(ctx, core.TaskConfig{Task: "t", MaxStartsPerSecond: 1}); err != nil {
		t.Fatal(err)
	}
	enqueue(t, b, core.EnqueueRequest{Task: "t"}, core.EnqueueRequest{Task: "t"}, core.EnqueueRequest{Task: "t"})
	signal, stop := b.Subscribe(core.DefaultQueue)
	defer stop()
	claimed := 0
	for claimed < 3 {
		// Drain the signals so far, then claim until the rate holds the
		// rest back.
		for len(signal) > 0 {
			<-signal
		}
		if n := len(claim(t, b, core.DefaultQueue, 10)); n > 0 {
			claimed += n
			continue
		}
		select {
		case <-signal:
		case <-time.After(5 * time.Second):
			t.Fatalf("no signal within 5s of a claim the start rate held back (%d of 3 claimed)", claimed)
		}
		if n := len(claim(t, b, core.DefaultQueue, 10)); n != 1 {
			t.Fatalf("claim after the signal returned %d jobs, want 1", n)
		}
		claimed++
	}
}
