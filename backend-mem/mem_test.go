package mem_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newBackend(t testing.TB) (*mem.Backend, *core.ManualClock) {
	t.Helper()
	clock := core.NewManualClock(t0)
	b := mem.New(mem.Options{Clock: clock})
	t.Cleanup(func() { _ = b.Close() })
	return b, clock
}

func enqueue(t testing.TB, b *mem.Backend, reqs ...core.EnqueueRequest) []core.Job {
	t.Helper()
	res, err := b.Enqueue(context.Background(), reqs)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	jobs := make([]core.Job, len(res))
	for i, r := range res {
		jobs[i] = r.Job
	}
	return jobs
}

func claim(t testing.TB, b *mem.Backend, queue string, n int) []core.Job {
	t.Helper()
	jobs, err := b.Claim(context.Background(), core.ClaimRequest{Queue: queue, WorkerID: "w1", Limit: n, LeaseTTL: time.Minute})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return jobs
}

func get(t testing.TB, b *mem.Backend, id string) core.Job {
	t.Helper()
	j, err := b.GetJob(context.Background(), id)
	if err != nil {
		t.Fatalf("GetJob: %v", err)
	}
	return j
}

func TestClaimOrder(t *testing.T) {
	b, clock := newBackend(t)
	// Enqueued out of order: priority first, then run-at, then id.
	enqueue(t, b,
		core.EnqueueRequest{Task: "a", Priority: 5},                              // 3rd
		core.EnqueueRequest{Task: "b", Priority: -1, RunAt: t0.Add(time.Second)}, // due later, 2nd once due
		core.EnqueueRequest{Task: "c", Priority: -1},                             // 1st
		core.EnqueueRequest{Task: "d", Priority: 5},                              // 4th (same priority and run-at as a, later id)
		core.EnqueueRequest{Task: "e", Queue: "other"},                           // other queue: never here
	)
	if got := claim(t, b, core.DefaultQueue, 1); len(got) != 1 || got[0].Task != "c" {
		t.Fatalf("first claim = %+v, want c", got)
	}
	if got := claim(t, b, core.DefaultQueue, 1); len(got) != 1 || got[0].Task != "a" {
		t.Fatalf("b is not due yet; got %+v, want a", got)
	}
	clock.Advance(time.Second)
	got := claim(t, b, core.DefaultQueue, 10)
	if len(got) != 2 || got[0].Task != "b" || got[1].Task != "d" {
		t.Fatalf("claim after due = %+v, want b then d", got)
	}
}

func TestClaimExclusiveUnderConcurrency(t *testing.T) {
	b, _ := newBackend(t)
	const total = 4000
	reqs := make([]core.EnqueueRequest, total)
	for i := range reqs {
		reqs[i] = core.EnqueueRequest{Task: "t", Priority: i % 7}
	}
	enqueue(t, b, reqs...)

	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				jobs, err := b.Claim(context.Background(), core.ClaimRequest{
					Queue: core.DefaultQueue, WorkerID: fmt.Sprintf("w%d", w), Limit: 1 + w%5, LeaseTTL: time.Minute})
				if err != nil {
					t.Error(err)
					return
				}
				if len(jobs) == 0 {
					return
				}
				items := make([]core.Completion, len(jobs))
				for i, j := range jobs {
					items[i] = core.Completion{Lease: j.Lease}
				}
				errs, err := b.Complete(context.Background(), items)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for i, j := range jobs {
					seen[j.ID]++
					if errs[i] != nil {
						t.Errorf("complete %s: %v", j.ID, errs[i])
					}
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	if len(seen) != total {
		t.Fatalf("claimed %d distinct jobs, want %d", len(seen), total)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("job %s claimed %d times", id, n)
		}
	}
	counts, _ := b.CountJobs(context.Background(), core.JobFilter{})
	if counts[core.StateSucceeded] != total || len(counts) != 1 {
		t.Fatalf("counts = %v", counts)
	}
}

func TestFencingAfterRescueAndCancel(t *testing.T) {
	ctx := context.Background()
	b, clock := newBackend(t)
	j := enqueue(t, b, core.EnqueueRequest{Task: "t", MaxAttempts: 3})[0]
	first := claim(t, b, core.DefaultQueue, 1)[0]
	if first.Attempt != 1 || first.Lease.Token != 1 {
		t.Fatalf("first claim attempt %d token %d", first.Attempt, first.Lease.Token)
	}
	if _, err := b.SaveCheckpoint(ctx, first.Lease, "s1", []byte("one")); err != nil {
		t.Fatal(err)
	}

	// An expired but unrescued lease still holds.
	clock.Advance(2 * time.Minute)
	if _, err := b.Heartbeat(ctx, first.Lease, time.Minute); err != nil {
		t.Fatalf("heartbeat of expired, unrescued lease: %v", err)
	}
	clock.Advance(2 * time.Minute)
	res, err := b.Rescue(ctx, core.RescueRequest{Limit: 10})
	if err != nil || res.Requeued != 1 {
		t.Fatalf("rescue = %+v, %v", res, err)
	}
	stale := first.Lease
	checkLost := func() {
		t.Helper()
		before := get(t, b, j.ID)
		if _, err := b.Heartbeat(ctx, stale, time.Minute); !errors.Is(err, core.ErrLeaseLost) {
			t.Fatalf("heartbeat: %v", err)
		}
		if errs, _ := b.Complete(ctx, []core.Completion{{Lease: stale}}); !errors.Is(errs[0], core.ErrLeaseLost) {
			t.Fatalf("complete: %v", errs[0])
		}
		if _, err := b.Fail(ctx, core.Failure{Lease: stale, Error: "x"}); !errors.Is(err, core.ErrLeaseLost) {
			t.Fatalf("fail: %v", err)
		}
		if err := b.Sleep(ctx, stale, clock.Now()); !errors.Is(err, core.ErrLeaseLost) {
			t.Fatalf("sleep: %v", err)
		}
		if _, err := b.SaveCheckpoint(ctx, stale, "s2", nil); !errors.Is(err, core.ErrLeaseLost) {
			t.Fatalf("checkpoint: %v", err)
		}
		if after := get(t, b, j.ID); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("stale mutation changed the job:\n%+v\n%+v", before, after)
		}
	}
	checkLost()

	second := claim(t, b, core.DefaultQueue, 1)[0]
	if second.Attempt != 2 || second.Lease.Token != 2 {
		t.Fatalf("second claim attempt %d token %d", second.Attempt, second.Lease.Token)
	}
	checkLost()
	// The checkpoint survived the rescue, and the first write wins.
	if v, err := b.SaveCheckpoint(ctx, second.Lease, "s1", []byte("two")); err != nil || string(v) != "one" {
		t.Fatalf("checkpoint = %q, %v", v, err)
	}
	if _, err := b.Cancel(ctx, j.ID, ""); err != nil {
		t.Fatal(err)
	}
	stale = second.Lease
	checkLost()
	runs, _ := b.ListRuns(ctx, j.ID)
	if len(runs) != 2 || runs[0].Status != core.RunLost || runs[1].Status != core.RunCancelled {
		t.Fatalf("runs = %+v", runs)
	}
}

func TestRescueExhaustsAttempts(t *testing.T) {
	ctx := context.Background()
	b, clock := newBackend(t)
	j := enqueue(t, b, core.EnqueueRequest{Task: "t", MaxAttempts: 1})[0]
	claim(t, b, core.DefaultQueue, 1)
	clock.Advance(time.Minute)
	res, err := b.Rescue(ctx, core.RescueRequest{Limit: 1})
	if err != nil || res.Failed != 1 {
		t.Fatalf("rescue = %+v, %v", res, err)
	}
	got := get(t, b, j.ID)
	if got.State != core.StateFailed || got.LastError != "lease expired" || !got.FinishedAt.Equal(clock.Now()) {
		t.Fatalf("job = %+v", got)
	}
	// Manual retry grants one more attempt.
	got, err = b.Retry(ctx, j.ID)
	if err != nil || got.State != core.StateQueued || got.MaxAttempts != 2 {
		t.Fatalf("retry = %+v, %v", got, err)
	}
}

func TestFailRetryAt(t *testing.T) {
	ctx := context.Background()
	b, clock := newBackend(t)
	enqueue(t, b, core.EnqueueRequest{Task: "t"})
	j := claim(t, b, core.DefaultQueue, 1)[0]
	st, err := b.Fail(ctx, core.Failure{Lease: j.Lease, Error: "boom", RetryAt: clock.Now().Add(10 * time.Second)})
	if err != nil || st != core.StateQueued {
		t.Fatalf("fail = %v, %v", st, err)
	}
	clock.Advance(9 * time.Second)
	if got := claim(t, b, core.DefaultQueue, 1); len(got) != 0 {
		t.Fatal("claimed before retry-at")
	}
	clock.Advance(time.Second)
	got := claim(t, b, core.DefaultQueue, 1)
	if len(got) != 1 || got[0].Attempt != 2 || got[0].LastError != "boom" {
		t.Fatalf("claim after retry-at = %+v", got)
	}
	if st, err := b.Fail(ctx, core.Failure{Lease: got[0].Lease, Error: "final", Terminal: true}); err != nil || st != core.StateFailed {
		t.Fatalf("terminal fail = %v, %v", st, err)
	}
	runs, _ := b.ListRuns(ctx, j.ID)
	if len(runs) != 2 || runs[0].Error != "boom" || runs[0].Duration() != 0 || runs[1].Duration() != 0 {
		t.Fatalf("runs = %+v", runs)
	}
}

func TestSleepKeepsAttempt(t *testing.T) {
	ctx := context.Background()
	b, clock := newBackend(t)
	enqueue(t, b, core.EnqueueRequest{Task: "t"})
	j := claim(t, b, core.DefaultQueue, 1)[0]
	if err := b.Sleep(ctx, j.Lease, clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := get(t, b, j.ID); got.State != core.StateSleeping {
		t.Fatalf("state %s", got.State)
	}
	if got := claim(t, b, core.DefaultQueue, 1); len(got) != 0 {
		t.Fatal("claimed a sleeping job before its wake time")
	}
	clock.Advance(time.Hour)
	got := claim(t, b, core.DefaultQueue, 1)
	if len(got) != 1 || got[0].Attempt != 1 || got[0].Lease.Token != 2 {
		t.Fatalf("wake claim = %+v", got)
	}
	runs, _ := b.ListRuns(ctx, j.ID)
	if len(runs) != 2 || runs[0].Status != core.RunSleeping || runs[0].Duration() != 0 {
		t.Fatalf("runs = %+v", runs)
	}
}

func TestDeadlines(t *testing.T) {
	ctx := context.Background()
	b, clock := newBackend(t)
	// MaxDelay: cancelled at claim time instead of handed out.
	late := enqueue(t, b, core.EnqueueRequest{Task: "t", Cancel: core.CancellationPolicy{MaxDelay: time.Second}})[0]
	ok := enqueue(t, b, core.EnqueueRequest{Task: "t"})[0]
	clock.Advance(time.Second)
	got := claim(t, b, core.DefaultQueue, 1)
	if len(got) != 1 || got[0].ID != ok.ID {
		t.Fatalf("claim = %+v", got)
	}
	if j := get(t, b, late.ID); j.State != core.StateCancelled || j.LastError == "" {
		t.Fatalf("late job = %+v", j)
	}
	// MaxDuration: a heartbeat past it cancels and loses the lease.
	long := enqueue(t, b, core.EnqueueRequest{Task: "t", Cancel: core.CancellationPolicy{MaxDuration: time.Minute}})[0]
	lj := claim(t, b, core.DefaultQueue, 1)[0]
	clock.Advance(time.Minute)
	if _, err := b.Heartbeat(ctx, lj.Lease, time.Minute); !errors.Is(err, core.ErrLeaseLost) {
		t.Fatalf("heartbeat past deadline: %v", err)
	}
	if j := get(t, b, long.ID); j.State != core.StateCancelled {
		t.Fatalf("long job = %+v", j)
	}
	// Rescue cancels jobs that are not due but past a deadline.
	enqueue(t, b, core.EnqueueRequest{Task: "t", RunAt: clock.Now().Add(time.Hour), Cancel: core.CancellationPolicy{MaxDelay: time.Minute}})
	clock.Advance(time.Minute)
	res, err := b.Rescue(ctx, core.RescueRequest{Limit: 5})
	if err != nil || res.Cancelled != 1 {
		t.Fatalf("rescue = %+v, %v", res, err)
	}
}

func TestIdempotency(t *testing.T) {
	ctx := context.Background()
	b, clock := newBackend(t)
	req := core.EnqueueRequest{Task: "t", IdempotencyKey: "k", Payload: []byte("p")}
	res, err := b.Enqueue(ctx, []core.EnqueueRequest{req, req})
	if err != nil || res[0].Reused || !res[1].Reused || res[0].Job.ID != res[1].Job.ID {
		t.Fatalf("batch = %+v, %v", res, err)
	}
	other := req
	other.Payload = []byte("q")
	if _, err := b.Enqueue(ctx, []core.EnqueueRequest{{Task: "t"}, other}); !errors.Is(err, core.ErrIdempotencyConflict) {
		t.Fatalf("conflict: %v", err)
	}
	if n, _ := b.CountJobs(ctx, core.JobFilter{}); n[core.StateQueued] != 1 {
		t.Fatalf("a failed batch stored something: %v", n)
	}
	// Another queue is another scope.
	other.Queue = "q2"
	if _, err := b.Enqueue(ctx, []core.EnqueueRequest{other}); err != nil {
		t.Fatal(err)
	}
	// The key stays held after the job ends, until cleanup deletes it.
	j := claim(t, b, core.DefaultQueue, 1)[0]
	if _, err := b.Complete(ctx, []core.Completion{{Lease: j.Lease}}); err != nil {
		t.Fatal(err)
	}
	if r, _ := b.Enqueue(ctx, []core.EnqueueRequest{req}); !r[0].Reused {
		t.Fatal("terminal job released its key")
	}
	clock.Advance(time.Second)
	if n, err := b.Cleanup(ctx, core.CleanupRequest{FinishedBefore: clock.Now(), Limit: 10}); err != nil || n != 1 {
		t.Fatalf("cleanup = %d, %v", n, err)
	}
	if r, _ := b.Enqueue(ctx, []core.EnqueueRequest{other, {Task: "t", IdempotencyKey: "k", Payload: []byte("new")}}); r[1].Reused {
		t.Fatal("cleanup did not release the key")
	}
}

func TestRateLimits(t *testing.T) {
	ctx := context.Background()
	b, clock := newBackend(t)
	if err := b.PutTaskConfig(ctx, core.TaskConfig{Task: "t", MaxInFlight: 3, MaxEnqueuePerSecond: 2}); err != nil {
		t.Fatal(err)
	}
	enqueue(t, b, core.EnqueueRequest{Task: "t"}, core.EnqueueRequest{Task: "t"})
	if _, err := b.Enqueue(ctx, []core.EnqueueRequest{{Task: "t"}}); !errors.Is(err, core.ErrRateLimited) {
		t.Fatalf("per second: %v", err)
	}
	clock.Advance(time.Second)
	enqueue(t, b, core.EnqueueRequest{Task: "t"})
	clock.Advance(time.Second)
	if _, err := b.Enqueue(ctx, []core.EnqueueRequest{{Task: "t"}}); !errors.Is(err, core.ErrRateLimited) {
		t.Fatalf("in flight: %v", err)
	}
	j := claim(t, b, core.DefaultQueue, 1)[0]
	b.Complete(ctx, []core.Completion{{Lease: j.Lease}})
	enqueue(t, b, core.EnqueueRequest{Task: "t"})
	enqueue(t, b, core.EnqueueRequest{Task: "other"}) // other tasks are not limited
}

func TestCleanupBoundedAndPerQueue(t *testing.T) {
	ctx := context.Background()
	b, clock := newBackend(t)
	for i := 0; i < 5; i++ {
		enqueue(t, b, core.EnqueueRequest{Task: "t"}, core.EnqueueRequest{Task: "t", Queue: "q2"})
	}
	for _, q := range []string{core.DefaultQueue, "q2"} {
		for _, j := range claim(t, b, q, 10) {
			b.Complete(ctx, []core.Completion{{Lease: j.Lease}})
			clock.Advance(time.Millisecond)
		}
	}
	if n, _ := b.Cleanup(ctx, core.CleanupRequest{Queue: "q2", FinishedBefore: clock.Now(), Limit: 3}); n != 3 {
		t.Fatalf("cleanup q2 = %d", n)
	}
	if n, _ := b.Cleanup(ctx, core.CleanupRequest{FinishedBefore: clock.Now(), Limit: 100}); n != 7 {
		t.Fatalf("cleanup all = %d", n)
	}
	st, _ := b.TaskStats(ctx, "t")
	if len(st.Jobs) != 0 || len(st.Runs) != 0 || st.RunTime != 0 {
		t.Fatalf("stats after cleanup = %+v", st)
	}
	if qs, _ := b.ListQueues(ctx); len(qs) != 0 {
		t.Fatalf("queues = %+v", qs)
	}
}

func TestListPagination(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t)
	var want []string
	for i := 0; i < 25; i++ {
		task := "even"
		if i%2 == 1 {
			task = "odd"
		}
		want = append(want, enqueue(t, b, core.EnqueueRequest{Task: task})[0].ID)
	}
	for _, desc := range []bool{false, true} {
		var got []string
		f := core.JobFilter{Limit: 4, Desc: desc}
		for pages := 0; ; pages++ {
			p, err := b.ListJobs(ctx, f)
			if err != nil || pages > 10 {
				t.Fatal(err)
			}
			for _, j := range p.Jobs {
				got = append(got, j.ID)
			}
			if p.Next == "" {
				break
			}
			f.Cursor = p.Next
		}
		if len(got) != len(want) {
			t.Fatalf("desc=%v: %d jobs, want %d", desc, len(got), len(want))
		}
		for i := range got {
			w := want[i]
			if desc {
				w = want[len(want)-1-i]
			}
			if got[i] != w {
				t.Fatalf("desc=%v: position %d = %s, want %s", desc, i, got[i], w)
			}
		}
	}
	p, _ := b.ListJobs(ctx, core.JobFilter{Task: "odd", Limit: 12})
	if len(p.Jobs) != 12 || p.Next != "" {
		t.Fatalf("odd page: %d jobs, next %q", len(p.Jobs), p.Next)
	}
}

func TestNoAliasing(t *testing.T) {
	b, _ := newBackend(t)
	payload := []byte("abc")
	headers := map[string]string{"h": "v"}
	j := enqueue(t, b, core.EnqueueRequest{Task: "t", Payload: payload, Headers: headers})[0]
	payload[0] = 'X'
	headers["h"] = "changed"
	j.Payload[1] = 'Y'
	got := get(t, b, j.ID)
	if string(got.Payload) != "abc" || got.Headers["h"] != "v" {
		t.Fatalf("stored job changed through caller memory: %+v", got)
	}
}

func TestClosed(t *testing.T) {
	b, _ := newBackend(t)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetJob(context.Background(), "x"); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("GetJob after Close: %v", err)
	}
	if _, err := b.Claim(context.Background(), core.ClaimRequest{}); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("malformed Claim after Close: %v", err)
	}
	if _, err := b.Enqueue(context.Background(), []core.EnqueueRequest{{Task: "t"}}); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("Enqueue after Close: %v", err)
	}
	if _, err := core.EnqueueTx(context.Background(), b, nil, nil); !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("EnqueueTx: %v", err)
	}
}

func TestNotify(t *testing.T) {
	b, _ := newBackend(t)
	sig, stop := b.Subscribe(core.DefaultQueue)
	defer stop()
	enqueue(t, b, core.EnqueueRequest{Task: "t"}, core.EnqueueRequest{Task: "t"})
	select {
	case <-sig:
	default:
		t.Fatal("no signal after enqueue")
	}
	select {
	case <-sig:
		t.Fatal("signals did not coalesce")
	default:
	}
}

// drained reports whether sig held a signal, and empties it.
func drained(sig <-chan struct{}) bool {
	select {
	case <-sig:
		return true
	default:
		return false
	}
}

func TestNotifyOnFinishRetryAndResume(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t)
	sig, stop := b.Subscribe("q")
	defer stop()
	other, stopOther := b.Subscribe("elsewhere")
	defer stopOther()

	enqueue(t, b, core.EnqueueRequest{Queue: "q", Task: "t"})
	if !drained(sig) || drained(other) {
		t.Fatal("enqueue signalled the wrong queues")
	}
	j := claim(t, b, "q", 1)[0]
	if drained(sig) {
		t.Fatal("a claim signalled")
	}
	if _, err := b.Fail(ctx, core.Failure{Lease: j.Lease, Error: "x", Terminal: true}); err != nil {
		t.Fatal(err)
	}
	if !drained(sig) {
		t.Fatal("no signal when the job finished")
	}
	if _, err := b.Retry(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if !drained(sig) {
		t.Fatal("no signal when the job was retried")
	}
	if err := b.PutQueueConfig(ctx, core.QueueConfig{Queue: "q", Paused: true}); err != nil {
		t.Fatal(err)
	}
	if got := claim(t, b, "q", 1); len(got) != 0 {
		t.Fatal("claimed from a paused queue")
	}
	if err := b.PutQueueConfig(ctx, core.QueueConfig{Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	if !drained(sig) {
		t.Fatal("no signal when the queue resumed")
	}
	stop()
	enqueue(t, b, core.EnqueueRequest{Queue: "q", Task: "t"})
	if drained(sig) {
		t.Fatal("signal after stop")
	}
}

func TestClockMovedBack(t *testing.T) {
	b, clock := newBackend(t)
	enqueue(t, b, core.EnqueueRequest{Task: "soon", RunAt: t0.Add(time.Minute)})
	clock.Advance(time.Minute)
	enqueue(t, b, core.EnqueueRequest{Task: "now", Priority: 1})
	// Make "soon" ready, then move the clock back before its run-at.
	if got := claim(t, b, core.DefaultQueue, 1); len(got) != 1 || got[0].Task != "soon" {
		t.Fatalf("claim = %+v", got)
	}
	enqueue(t, b, core.EnqueueRequest{Task: "later", RunAt: t0.Add(2 * time.Minute)})
	clock.Advance(time.Minute)
	if got := claim(t, b, core.DefaultQueue, 1); len(got) != 1 || got[0].Task != "later" {
		t.Fatalf("claim = %+v", got)
	}
	clock.Set(t0)
	enqueue(t, b, core.EnqueueRequest{Task: "back"})
	got := claim(t, b, core.DefaultQueue, 10)
	if len(got) != 1 || got[0].Task != "back" {
		t.Fatalf("after the clock moved back: %+v", got)
	}
	clock.Set(t0.Add(time.Hour))
	if got := claim(t, b, core.DefaultQueue, 10); len(got) != 1 || got[0].Task != "now" {
		t.Fatalf("after the clock moved on: %+v", got)
	}
}

func TestStatsAndQueues(t *testing.T) {
	ctx := context.Background()
	b, clock := newBackend(t)
	enqueue(t, b, core.EnqueueRequest{Queue: "a", Task: "t"}, core.EnqueueRequest{Queue: "b", Task: "t"}, core.EnqueueRequest{Queue: "b", Task: "u"})
	if err := b.PutQueueConfig(ctx, core.QueueConfig{Queue: "c", Paused: true}); err != nil {
		t.Fatal(err)
	}
	j := claim(t, b, "b", 1)[0]
	clock.Advance(3 * time.Second)
	b.Complete(ctx, []core.Completion{{Lease: j.Lease}})
	st, err := b.TaskStats(ctx, "t")
	if err != nil || st.Jobs[core.StateQueued] != 1 || st.Jobs[core.StateSucceeded] != 1 ||
		st.Runs[core.RunSucceeded] != 1 || st.RunTime != 3*time.Second {
		t.Fatalf("stats = %+v, %v", st, err)
	}
	qs, err := b.ListQueues(ctx)
	if err != nil || len(qs) != 3 || qs[0].Queue != "a" || qs[1].Jobs[core.StateSucceeded] != 1 || !qs[2].Paused {
		t.Fatalf("queues = %+v, %v", qs, err)
	}
	n, _ := b.CountJobs(ctx, core.JobFilter{Queue: "b", Task: "u"})
	if len(n) != 1 || n[core.StateQueued] != 1 {
		t.Fatalf("count b/u = %v", n)
	}
}

// TestWakeSignalOnProcessClock: on the process clock, a job scheduled ahead
// signals its queue when it comes due. The wait is bounded by an event, not
// a sleep: it ends when the signal arrives.
func TestWakeSignalOnProcessClock(t *testing.T) {
	b := mem.New(mem.Options{})
	defer b.Close()
	sig, stop := b.Subscribe("q")
	defer stop()
	ctx := context.Background()
	due := time.Now().Add(20 * time.Millisecond)
	if _, err := b.Enqueue(ctx, []core.EnqueueRequest{
		{Queue: "q", Task: "t", RunAt: due.Add(time.Hour)}, // a later timer must not hide the earlier one
		{Queue: "q", Task: "t", RunAt: due},
	}); err != nil {
		t.Fatal(err)
	}
	// Claim until the job is handed out, waiting for a signal after each
	// empty claim. Without the wake-up signal the loop would wait forever.
	for {
		jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 10, LeaseTTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) == 1 {
			return
		}
		if len(jobs) > 1 {
			t.Fatalf("claimed %d jobs, want only the due one", len(jobs))
		}
		select {
		case <-sig:
		case <-time.After(10 * time.Second):
			t.Fatal("no signal when the scheduled job came due")
		}
	}
}
