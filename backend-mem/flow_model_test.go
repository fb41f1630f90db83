package mem_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

// flowModel is the reference meaning of the flow rules at claim, computed
// the slow way: from every job of the store, read back, it picks the jobs a
// claim must hand out by walking the due jobs of the queue in claim order
// and counting running jobs by task, queue and key. TestFlowModel holds
// the backend's every claim to it, after random sequences of every
// transition that moves a count or a sequence.
type flowModel struct {
	tasks   map[string]core.TaskConfig
	queues  map[string]core.QueueConfig
	holding map[string]bool // failed jobs holding their sequence
	starts  []start         // every claim: its second, task and key
}

type start struct {
	sec       int64
	task, key string
}

// expect returns the ids a claim of limit jobs of queue must return at now.
func (m *flowModel) expect(jobs []core.Job, queue string, limit int, now time.Time) []string {
	if m.queues[queue].Paused {
		return nil
	}
	running := map[string]int{} // "t:"+task, "q:"+queue, "k:"+task+"/"+key
	busySeq := map[string]bool{}
	heldSeq := map[string]bool{}
	minActive := map[string]string{} // sequence -> smallest active id
	seqOf := func(j core.Job) string { return j.Queue + "/" + j.SequenceKey }
	for _, j := range jobs {
		if j.State == core.StateRunning {
			running["t:"+j.Task]++
			running["q:"+j.Queue]++
			if j.LimitKey != "" {
				running["k:"+j.Task+"/"+j.LimitKey]++
			}
		}
		if j.SequenceKey == "" {
			continue
		}
		if j.State == core.StateRunning || j.State == core.StateSleeping {
			busySeq[seqOf(j)] = true
		}
		if m.holding[j.ID] {
			heldSeq[seqOf(j)] = true
		}
		if !j.State.Terminal() {
			if cur, ok := minActive[seqOf(j)]; !ok || j.ID < cur {
				minActive[seqOf(j)] = j.ID
			}
		}
	}
	sec := now.Unix()
	startsOf := func(task, key string) int {
		n := 0
		for _, s := range m.starts {
			if s.sec == sec && s.task == task && (key == "" || s.key == key) {
				n++
			}
		}
		return n
	}
	var due []core.Job
	for _, j := range jobs {
		if j.Queue == queue && (j.State == core.StateQueued || j.State == core.StateSleeping) && !j.RunAt.After(now) {
			due = append(due, j)
		}
	}
	slices.SortFunc(due, func(a, b core.Job) int {
		if a.Priority != b.Priority {
			return a.Priority - b.Priority
		}
		if c := a.RunAt.Compare(b.RunAt); c != 0 {
			return c
		}
		return compareStr(a.ID, b.ID)
	})
	var out []string
	extraT, extraK := map[string]int{}, map[string]int{}
	for _, j := range due {
		if len(out) == limit {
			break
		}
		if ql := m.queues[queue].MaxRunning; ql > 0 && running["q:"+queue] >= ql {
			break
		}
		cfg := m.tasks[j.Task]
		if j.SequenceKey != "" {
			sq := seqOf(j)
			self := j.State == core.StateSleeping
			if heldSeq[sq] || minActive[sq] != j.ID || busySeq[sq] && !self {
				continue
			}
		}
		if cfg.MaxRunning > 0 && running["t:"+j.Task] >= cfg.MaxRunning {
			continue
		}
		if cfg.MaxStartsPerSecond > 0 && startsOf(j.Task, "")+extraT[j.Task] >= cfg.MaxStartsPerSecond {
			continue
		}
		if j.LimitKey != "" {
			k := j.Task + "/" + j.LimitKey
			if cfg.MaxRunningPerKey > 0 && running["k:"+k] >= cfg.MaxRunningPerKey {
				continue
			}
			if cfg.MaxStartsPerSecondPerKey > 0 && startsOf(j.Task, j.LimitKey)+extraK[k] >= cfg.MaxStartsPerSecondPerKey {
				continue
			}
			running["k:"+k]++
			extraK[k]++
		}
		running["t:"+j.Task]++
		running["q:"+queue]++
		extraT[j.Task]++
		if j.SequenceKey != "" {
			busySeq[seqOf(j)] = true
		}
		out = append(out, j.ID)
	}
	return out
}

func compareStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// allJobs reads every job of the store.
func allJobs(t *testing.T, b *mem.Backend) []core.Job {
	t.Helper()
	var out []core.Job
	f := core.JobFilter{Limit: core.MaxPageSize}
	for {
		page, err := b.ListJobs(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Jobs...)
		if page.Next == "" {
			return out
		}
		f.Cursor = page.Next
	}
}

// noteFailures records, for every job that moved to failed between before
// and after, whether it holds its sequence under its task's config now.
func (m *flowModel) noteFailures(before, after []core.Job) {
	was := map[string]core.JobState{}
	for _, j := range before {
		was[j.ID] = j.State
	}
	for _, j := range after {
		if j.State == core.StateFailed && was[j.ID] != core.StateFailed && j.SequenceKey != "" {
			if m.tasks[j.Task].HoldSequenceOnFailure {
				m.holding[j.ID] = true
			}
		}
		if j.State != core.StateFailed {
			delete(m.holding, j.ID)
		}
	}
}

func TestFlowModel(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runFlowModel(t, seed, 400) })
	}
}

func runFlowModel(t *testing.T, seed int64, steps int) {
	ctx := context.Background()
	rng := rand.New(rand.NewSource(seed))
	b, clock := newBackend(t)
	m := &flowModel{tasks: map[string]core.TaskConfig{}, queues: map[string]core.QueueConfig{}, holding: map[string]bool{}}
	queues := []string{"q1", "q2"}
	tasks := []string{"a", "b"}
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	pickJob := func(jobs []core.Job, states ...core.JobState) (core.Job, bool) {
		var c []core.Job
		for _, j := range jobs {
			if slices.Contains(states, j.State) {
				c = append(c, j)
			}
		}
		if len(c) == 0 {
			return core.Job{}, false
		}
		return c[rng.Intn(len(c))], true
	}
	for step := 0; step < steps; step++ {
		jobs := allJobs(t, b)
		now := clock.Now().UTC().Truncate(time.Microsecond)
		op := rng.Intn(100)
		switch {
		case op < 22:
			var reqs []core.EnqueueRequest
			for range 1 + rng.Intn(3) {
				r := core.EnqueueRequest{
					Queue: pick(queues...), Task: pick(tasks...), Priority: rng.Intn(3),
					LimitKey: pick("", "k1", "k2", "k3"), SequenceKey: pick("", "", "s1", "s2"),
					MaxAttempts: 1 + rng.Intn(3),
				}
				if rng.Intn(4) == 0 {
					r.RunAt = now.Add(time.Duration(rng.Intn(2000)) * time.Millisecond)
				}
				if rng.Intn(5) == 0 {
					// Rescue cancels it once it has run that long.
					r.Cancel.MaxDuration = time.Duration(1+rng.Intn(4)) * time.Second
				}
				reqs = append(reqs, r)
			}
			if _, err := b.Enqueue(ctx, reqs); err != nil {
				t.Fatal(err)
			}
		case op < 50:
			q, limit := pick(queues...), 1+rng.Intn(4)
			for _, j := range jobs {
				// A claim cancels the due jobs past their deadline that it
				// meets, which the model does not predict: Rescue cancels
				// them first.
				if _, passed := core.DeadlinePassed(j, now); passed && !j.State.Terminal() {
					if _, err := b.Rescue(ctx, core.RescueRequest{Limit: 1000}); err != nil {
						t.Fatal(err)
					}
					after := allJobs(t, b)
					m.noteFailures(jobs, after)
					jobs = after
					break
				}
			}
			want := m.expect(jobs, q, limit, now)
			got, err := b.Claim(ctx, core.ClaimRequest{Queue: q, WorkerID: "w", Limit: limit, LeaseTTL: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, j := range got {
				ids = append(ids, j.ID)
				m.starts = append(m.starts, start{sec: now.Unix(), task: j.Task, key: j.LimitKey})
			}
			if !slices.Equal(ids, want) {
				for _, id := range want {
					t.Logf("want %s: %s", id, mem.DebugJob(b, id))
				}
				t.Fatalf("step %d: claim %s limit %d at %v: got %v, want %v\nconfigs %v %v\nholding %v\njobs %v", step, q, limit, now, ids, want, m.tasks, m.queues, m.holding, brief(jobs))
			}
		case op < 60:
			if j, ok := pickJob(jobs, core.StateRunning); ok {
				if errs, err := b.Complete(ctx, []core.Completion{{Lease: j.Lease}}); err != nil || errs[0] != nil {
					t.Fatal(err, errs)
				}
			}
		case op < 68:
			if j, ok := pickJob(jobs, core.StateRunning); ok {
				f := core.Failure{Lease: j.Lease, Error: "x", Terminal: rng.Intn(3) == 0}
				if rng.Intn(2) == 0 {
					f.RetryAt = now.Add(time.Duration(rng.Intn(1500)) * time.Millisecond)
				}
				if _, err := b.Fail(ctx, f); err != nil {
					t.Fatal(err)
				}
			}
		case op < 73:
			if j, ok := pickJob(jobs, core.StateRunning); ok {
				if err := b.Sleep(ctx, j.Lease, now.Add(time.Duration(rng.Intn(1500))*time.Millisecond)); err != nil {
					t.Fatal(err)
				}
			}
		case op < 77:
			if j, ok := pickJob(jobs, core.StateQueued, core.StateRunning, core.StateSleeping); ok {
				if _, err := b.Cancel(ctx, j.ID, ""); err != nil {
					t.Fatal(err)
				}
			}
		case op < 81:
			if j, ok := pickJob(jobs, core.StateFailed, core.StateCancelled); ok {
				if _, err := b.Retry(ctx, j.ID); err != nil {
					t.Fatal(err)
				}
			}
		case op < 84:
			if j, ok := pickJob(jobs, core.AllStates...); ok {
				if err := b.DeleteJob(ctx, j.ID, true); err != nil {
					t.Fatal(err)
				}
			}
		case op < 88:
			cfg := core.TaskConfig{Task: pick(tasks...)}
			lim := func(n int) int {
				if rng.Intn(2) == 0 {
					return 0
				}
				return 1 + rng.Intn(n)
			}
			cfg.MaxRunning, cfg.MaxRunningPerKey = lim(4), lim(2)
			cfg.MaxStartsPerSecond, cfg.MaxStartsPerSecondPerKey = lim(4), lim(2)
			cfg.HoldSequenceOnFailure = rng.Intn(2) == 0
			if err := b.PutTaskConfig(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			m.tasks[cfg.Task] = cfg
		case op < 90:
			cfg := core.QueueConfig{Queue: pick(queues...), MaxRunning: rng.Intn(4), Paused: rng.Intn(8) == 0}
			if err := b.PutQueueConfig(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			m.queues[cfg.Queue] = cfg
			t.Logf("step %d: queue config %+v", step, cfg)
		case op < 92:
			if rng.Intn(2) == 0 {
				clock.Advance(11 * time.Second) // past every lease
			}
			if _, err := b.Rescue(ctx, core.RescueRequest{Limit: 1 + rng.Intn(5)}); err != nil {
				t.Fatal(err)
			}
		case op < 93:
			q := pick(queues...)
			res, err := b.DeleteQueue(ctx, core.DeleteQueueRequest{Queue: q, Limit: 1 + rng.Intn(3)})
			if err != nil {
				t.Fatal(err)
			}
			if res.Done {
				delete(m.queues, q) // its config goes with its last job
				t.Logf("step %d: queue %s deleted", step, q)
			}
		case op < 94:
			if _, err := b.Cleanup(ctx, core.CleanupRequest{FinishedBefore: now, Limit: 1 + rng.Intn(3)}); err != nil {
				t.Fatal(err)
			}
		default:
			clock.Advance(time.Duration(rng.Intn(1200)) * time.Millisecond)
		}
		if err := mem.CheckFlow(b); err != nil {
			t.Fatalf("step %d (op %d): %v", step, op, err)
		}
		after := allJobs(t, b)
		m.noteFailures(jobs, after)
		checkRunningByKey(t, b, after, tasks)
	}
}

// checkRunningByKey holds RunningByKey to the running jobs counted.
func checkRunningByKey(t *testing.T, b *mem.Backend, jobs []core.Job, tasks []string) {
	t.Helper()
	for _, task := range tasks {
		want := map[string]int64{}
		for _, j := range jobs {
			if j.Task == task && j.State == core.StateRunning && j.LimitKey != "" {
				want[j.LimitKey]++
			}
		}
		got, err := b.RunningByKey(context.Background(), task, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("RunningByKey(%s) = %v, want %v", task, got, want)
		}
		for i, kc := range got {
			if want[kc.Key] != kc.Running {
				t.Fatalf("RunningByKey(%s) = %v, want %v", task, got, want)
			}
			if i > 0 && (got[i-1].Running < kc.Running || got[i-1].Running == kc.Running && got[i-1].Key > kc.Key) {
				t.Fatalf("RunningByKey(%s) = %v: not ordered", task, got)
			}
		}
	}
}

func brief(jobs []core.Job) string {
	s := ""
	for _, j := range jobs {
		s += fmt.Sprintf("\n  %s %s/%s p%d k=%q s=%q %s runAt=%s", j.ID, j.Queue, j.Task, j.Priority, j.LimitKey, j.SequenceKey, j.State, j.RunAt.Format("05.000"))
	}
	return s
}
