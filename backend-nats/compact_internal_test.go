package natsq

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

func internalServer(t *testing.T) *nats.Conn {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(20 * time.Second) {
		t.Fatal("server not ready")
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// digest describes a state with every index, in a canonical order, so two
// replicas can be compared.
func digest(s *state) string {
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	for id, r := range s.jobs {
		cps := make([]string, 0, len(r.checkpoints))
		for k, cp := range r.checkpoints {
			cps = append(cps, fmt.Sprintf("%s=%x@%d", k, cp.Value, cp.CreatedAt.UnixMicro()))
		}
		sort.Strings(cps)
		add("job %s %v runs=%v cps=%v", id, fmt.Sprint(r.job), fmt.Sprint(r.runs), cps)
	}
	s.ids.Ascend(func(id string) bool { add("id %s", id); return true })
	for q, t := range s.qids {
		t.Ascend(func(id string) bool { add("qid %s %s", q, id); return true })
	}
	// Where a job waits (lane or schedule) and which gates are closed may
	// differ between a replica that replayed the log and one rebuilt from
	// a snapshot; that a job is placed, and the lane it is in once placed,
	// may not.
	for id, r := range s.jobs {
		if r.where != unplaced {
			add("placed %s %s %s/%s", r.job.Queue, id, r.job.Task, r.job.LimitKey)
		}
		if r.holdsSeq {
			add("holds sequence %s", id)
		}
	}
	for k, q := range s.seqs {
		var ids []string
		q.members.Ascend(func(id string) bool { ids = append(ids, id); return true })
		add("sequence %v members=%v busy=%d holding=%d admitted=%s", k, ids, q.busy, q.holding, q.admitted)
	}
	for k, n := range s.flow.taskRunning {
		add("task running %s %d", k, n)
	}
	for k, m := range s.flow.keyRunning {
		for key, n := range m {
			add("key running %s %s %d", k, key, n)
		}
	}
	for k, n := range s.flow.queueRunning {
		add("queue running %s %d", k, n)
	}
	if len(s.flow.taskStarts) > 0 || len(s.flow.keyStarts) > 0 {
		add("starts %d %v %v", s.flow.rateSec, s.flow.taskStarts, s.flow.keyStarts)
	}
	for id := range s.running {
		add("running %s", id)
	}
	for q, m := range s.deadlined {
		for id := range m {
			add("deadlined %s %s", q, id)
		}
	}
	s.finished.Ascend(func(k finKey) bool { add("finished %v", k); return true })
	for k, n := range s.counts {
		add("count %v %d", k, n)
	}
	for task, rs := range s.taskRuns {
		if len(rs.runs) > 0 || rs.runTime != 0 {
			add("runs %s %v %v", task, rs.runs, rs.runTime)
		}
	}
	for k, n := range s.active {
		add("active %s %d", k, n)
	}
	for k, c := range s.created {
		add("created %s %v", k, c)
	}
	for k, r := range s.idem {
		add("idem %v %s", k, r.job.ID)
	}
	for k, c := range s.taskCfg {
		add("task %s %+v", k, c)
	}
	for k, c := range s.queueCfg {
		add("queue %s %+v", k, c)
	}
	for q := range s.declared {
		add("declared %s", q)
	}
	for k, p := range s.parts {
		add("part %d %d", k, len(p))
	}
	waitDigest(s, add)
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// work runs a mix of every kind of command on b.
func work(t *testing.T, b *Backend, clock *core.ManualClock, rounds int) {
	t.Helper()
	ctx := context.Background()
	if err := b.PutTaskConfig(ctx, core.TaskConfig{Task: "limited", MaxInFlight: 1000}); err != nil {
		t.Fatal(err)
	}
	if err := b.PutQueueConfig(ctx, core.QueueConfig{Queue: "paused", Paused: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.CreateQueue(ctx, core.QueueConfig{Queue: "declared", CleanupLimit: 3}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < rounds; i++ {
		_, err := b.Enqueue(ctx, []core.EnqueueRequest{
			{Task: "limited", IdempotencyKey: fmt.Sprint("k", i), Priority: i % 3, Payload: []byte(fmt.Sprint(i))},
			{Task: "other", Cancel: core.CancellationPolicy{MaxDelay: time.Hour, MaxDuration: 2 * time.Hour}},
			{Queue: "paused", Task: "other", RunAt: clock.Now().Add(time.Minute)},
		})
		if err != nil {
			t.Fatal(err)
		}
		jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "default", WorkerID: "w", Limit: 2, LeaseTTL: time.Minute})
		if err != nil || len(jobs) == 0 {
			t.Fatalf("claim: %v", err)
		}
		if _, err := b.SaveCheckpoint(ctx, jobs[0].Lease, "step", []byte("v")); err != nil {
			t.Fatal(err)
		}
		switch i % 4 {
		case 0:
			_, err = b.Complete(ctx, []core.Completion{{Lease: jobs[0].Lease, Result: []byte("ok")}})
		case 1:
			_, err = b.Fail(ctx, core.Failure{Lease: jobs[0].Lease, Error: "boom", RetryAt: clock.Now().Add(time.Second)})
		case 2:
			err = b.Sleep(ctx, jobs[0].Lease, clock.Now().Add(time.Second))
		case 3:
			_, err = b.Cancel(ctx, jobs[0].ID, "stop")
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) > 1 && i%5 == 2 {
			// The second claimed job is still running: only force deletes it.
			if err := b.DeleteJob(ctx, jobs[1].ID, true); err != nil {
				t.Fatal(err)
			}
		}
		workFlow(t, b, i)
		workAwait(t, b, clock, i)
		clock.Advance(1500 * time.Millisecond)
		if i%10 == 9 {
			if _, err := b.DeleteQueue(ctx, core.DeleteQueueRequest{Queue: "paused", Limit: 2}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Rescue(ctx, core.RescueRequest{Limit: 100}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Cleanup(ctx, core.CleanupRequest{FinishedBefore: clock.Now().Add(-5 * time.Second), Limit: 3}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// workFlow runs flow-controlled jobs in queue "flow": limit keys under a
// per-key limit and a start rate, sequences that failures hold, and
// while-active keys that retries take back.
func workFlow(t *testing.T, b *Backend, i int) {
	t.Helper()
	ctx := context.Background()
	if i == 0 {
		if err := b.PutTaskConfig(ctx, core.TaskConfig{Task: "flow", MaxRunningPerKey: 1, MaxStartsPerSecond: 3, HoldSequenceOnFailure: true}); err != nil {
			t.Fatal(err)
		}
		if err := b.PutQueueConfig(ctx, core.QueueConfig{Queue: "flow", MaxRunning: 4}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := []core.EnqueueRequest{
		{Queue: "flow", Task: "flow", LimitKey: fmt.Sprint("tenant", i%3)},
		{Queue: "flow", Task: "flow", SequenceKey: fmt.Sprint("seq", i%2), MaxAttempts: 1},
		{Queue: "flow", Task: "flow", IdempotencyKey: fmt.Sprint("active", i%2), Unique: core.UniqueWhileActive},
	}
	if _, err := b.Enqueue(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "flow", WorkerID: "w", Limit: 3, LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for n, j := range jobs {
		switch (i + n) % 3 {
		case 0:
			_, err = b.Complete(ctx, []core.Completion{{Lease: j.Lease}})
		case 1:
			_, err = b.Fail(ctx, core.Failure{Lease: j.Lease, Error: "boom", Terminal: true})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if i%4 == 3 {
		page, err := b.SearchJobs(ctx, core.JobSearch{JobFilter: core.JobFilter{Queue: "flow", States: []core.JobState{core.StateFailed}, Limit: 1}})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range page.Jobs {
			if _, err := b.Retry(ctx, j.ID); err != nil && !errors.Is(err, core.ErrIdempotencyConflict) {
				t.Fatal(err)
			}
		}
	}
}

// A snapshot rebuilds exactly the state, indexes included, that replaying
// the log builds; a replica whose next commands were purged reloads it.
func TestSnapshotRestoresEveryIndex(t *testing.T) {
	nc := internalServer(t)
	ctx := context.Background()
	clock := core.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	opts := Options{Namespace: "snap", DecisionClock: clock, CompactEvery: -1, CompactKeep: 1}
	w, err := New(ctx, nc, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	lag, err := New(ctx, nc, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer lag.Close()
	work(t, w, clock, 30)
	if err := lag.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	lag.cons.Stop() // lag stops following the log

	work(t, w, clock, 30)
	seq, err := w.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info, err := w.stream.Info(ctx)
	if err != nil || info.State.FirstSeq != seq {
		t.Fatalf("after compaction at %d the log starts at %d (%v)", seq, info.State.FirstSeq, err)
	}
	work(t, w, clock, 5)

	// A new replica starts from the snapshot and the commands after it.
	fresh, err := New(ctx, nc, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	// The lagging replica resumes, meets the gap and reloads.
	lag.mu.RLock()
	from := lag.st.applied + 1
	lag.mu.RUnlock()
	if err := lag.startConsumer(ctx, from); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Backend{fresh, lag} {
		if err := r.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	w.mu.RLock()
	want := digest(w.st)
	waits, woken, edges := len(w.st.waits), 0, 0
	for _, wr := range w.st.waits {
		edges += len(wr.open)
		if wr.wait.Woken {
			woken++
		}
	}
	w.mu.RUnlock()
	if woken == 0 || edges == 0 || woken == waits {
		t.Fatalf("the work left %d waits, %d woken, %d edges: too few to check the snapshot", waits, woken, edges)
	}
	for name, r := range map[string]*Backend{"fresh": fresh, "lagging": lag} {
		r.mu.RLock()
		got := digest(r.st)
		r.mu.RUnlock()
		if got != want {
			gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
			for _, l := range wl {
				if !slices.Contains(gl, l) {
					t.Errorf("%s replica lacks: %s", name, l)
				}
			}
			for _, l := range gl {
				if !slices.Contains(wl, l) {
					t.Errorf("%s replica has extra: %s", name, l)
				}
			}
			t.Fatalf("%s replica differs from the writer", name)
		}
	}
	// Work goes on from the restored replicas: keys held before are reused.
	page, err := w.ListJobs(ctx, core.JobFilter{Task: "limited", Limit: 1})
	if err != nil || len(page.Jobs) == 0 {
		t.Fatalf("list: %v", err)
	}
	held := page.Jobs[0]
	res, err := fresh.Enqueue(ctx, []core.EnqueueRequest{{Task: "limited", IdempotencyKey: held.IdempotencyKey, Payload: held.Payload}})
	if err != nil || !res[0].Reused || res[0].Job.ID != held.ID {
		t.Fatalf("reuse after restore: %v %+v", err, res)
	}
	if !reflect.DeepEqual(lag.isClosed(), nil) {
		t.Fatalf("lagging replica broken: %v", lag.isClosed())
	}
}
