package natsq

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// The flow rules checked against the replica's state machine itself,
// without a server: random commands are applied to a replica, to the
// replicas rebuilt from its snapshots along the way, and every claim's
// outcome is compared with a claim decided from scratch by the rules
// (scanning every job, recounting every counter). After every command the
// indexes are checked against the jobs.

// flowModel drives a set of replicas that must agree.
type flowModel struct {
	t        *testing.T
	rnd      *rand.Rand
	now      time.Time
	replicas []*state
	req      uint64
	// starts counts the claims of each task and (task, key) in the second
	// startSec, from the claims' outcomes.
	startSec   int64
	taskStarts map[string]int
	keyStarts  map[taskKey]int
	claimed    int
}

func (m *flowModel) primary() *state { return m.replicas[0] }

// apply applies c, encoded and decoded afresh, to every replica and
// returns the primary's outcome; the replicas' outcomes must agree.
func (m *flowModel) apply(c command) outcome {
	m.t.Helper()
	m.req++
	c.Origin, c.Req, c.Now = "model", m.req, m.now
	data, err := json.Marshal(c)
	if err != nil {
		m.t.Fatal(err)
	}
	var first outcome
	for i, s := range m.replicas {
		out, err := applyEncoded(s, data, m.now)
		if err != nil {
			m.t.Fatalf("replica %d: %s: %v", i, c.Op, err)
		}
		if i == 0 {
			first = out
			continue
		}
		if got, want := outcomeDigest(out), outcomeDigest(first); got != want {
			m.t.Fatalf("replica %d decided %s differently:\n got %s\nwant %s", i, c.Op, got, want)
		}
	}
	for i, s := range m.replicas {
		if err := checkFlowIndexes(s); err != nil {
			m.t.Fatalf("replica %d after %s %d: %v", i, c.Op, m.req, err)
		}
	}
	return first
}

// applyEncoded decodes data, an encoded command, and applies it to s as
// the log's next command, stored at ts.
func applyEncoded(s *state, data []byte, ts time.Time) (outcome, error) {
	var c command
	if err := json.Unmarshal(data, &c); err != nil {
		return outcome{}, err
	}
	s.decide(&c, ts)
	out, err := s.apply(&c)
	if err != nil {
		return outcome{}, err
	}
	s.applied++
	clear(s.touched)
	return out, nil
}

func outcomeDigest(o outcome) string {
	return fmt.Sprintf("err=%v jobs=%v enq=%d state=%s job=%s", o.err, jobIDsOf(o.jobs), len(o.enqueued), o.state, o.job.ID)
}

func jobIDsOf(jobs []core.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// refClaim decides a claim of limit jobs of queue at now from scratch: it
// walks every job of the queue in claim order and applies each rule by
// counting jobs.
func (m *flowModel) refClaim(s *state, queue string, limit int) []string {
	if s.queueCfg[queue].Paused {
		return nil
	}
	taskRun, keyRun, queueRun := map[string]int{}, map[taskKey]int{}, 0
	for _, r := range s.jobs {
		if r.job.State == core.StateRunning {
			taskRun[r.job.Task]++
			keyRun[taskKey{r.job.Task, r.job.LimitKey}]++
			if r.job.Queue == queue {
				queueRun++
			}
		}
	}
	sec := floorDiv(micros(m.now), 1e6)
	tStarts, kStarts := map[string]int{}, map[taskKey]int{}
	if sec == m.startSec {
		tStarts, kStarts = maps2(m.taskStarts), maps2(m.keyStarts)
	}
	var cands []*jobRec
	for _, r := range s.jobs {
		j := &r.job
		if j.Queue == queue && (j.State == core.StateQueued || j.State == core.StateSleeping) && !j.RunAt.After(m.now) {
			cands = append(cands, r)
		}
	}
	sort.Slice(cands, func(a, b int) bool { return readyLess(rkey(cands[a]), rkey(cands[b])) })
	picked := map[string]bool{}
	var out []string
	for _, r := range cands {
		if len(out) >= limit {
			break
		}
		if n := s.queueCfg[queue].MaxRunning; n > 0 && queueRun >= n {
			break
		}
		j := &r.job
		if j.SequenceKey != "" && !seqAllows(s, r, picked) {
			continue
		}
		cfg := s.taskCfg[j.Task]
		tk := taskKey{j.Task, j.LimitKey}
		if cfg.MaxRunning > 0 && taskRun[j.Task] >= cfg.MaxRunning || cfg.MaxStartsPerSecond > 0 && tStarts[j.Task] >= cfg.MaxStartsPerSecond {
			continue
		}
		if j.LimitKey != "" && (cfg.MaxRunningPerKey > 0 && keyRun[tk] >= cfg.MaxRunningPerKey ||
			cfg.MaxStartsPerSecondPerKey > 0 && kStarts[tk] >= cfg.MaxStartsPerSecondPerKey) {
			continue
		}
		picked[j.ID] = true
		out = append(out, j.ID)
		taskRun[j.Task]++
		keyRun[tk]++
		queueRun++
		tStarts[j.Task]++
		kStarts[tk]++
	}
	return out
}

func maps2[K comparable](m map[K]int) map[K]int {
	out := make(map[K]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// seqAllows is the sequence rule read literally, with the jobs picked so
// far by the claim being decided counted as running.
func seqAllows(s *state, r *jobRec, picked map[string]bool) bool {
	j := &r.job
	for _, o := range s.jobs {
		oj := &o.job
		if oj.Queue != j.Queue || oj.SequenceKey != j.SequenceKey || oj.ID == j.ID {
			continue
		}
		busy := oj.State == core.StateRunning || oj.State == core.StateSleeping || picked[oj.ID]
		if oj.ID < j.ID && oj.State.Active() || oj.State == core.StateFailed && o.holdsSeq || busy {
			return false
		}
	}
	return true
}

// checkFlowIndexes checks the flow indexes of s against its jobs.
func checkFlowIndexes(s *state) error {
	taskRun, keyRun, queueRun := map[string]int64{}, map[string]map[string]int64{}, map[string]int64{}
	for id, r := range s.jobs {
		j := &r.job
		if j.State == core.StateRunning {
			taskRun[j.Task]++
			queueRun[j.Queue]++
			if j.LimitKey != "" {
				if keyRun[j.Task] == nil {
					keyRun[j.Task] = map[string]int64{}
				}
				keyRun[j.Task][j.LimitKey]++
			}
		}
		waiting := j.State == core.StateQueued || j.State == core.StateSleeping
		want := waiting && (j.SequenceKey == "" || seqAllows(s, r, nil))
		if placed := r.where != unplaced; placed != want {
			return fmt.Errorf("job %s (%s, sequence %q) placed=%v, want %v", id, j.State, j.SequenceKey, placed, want)
		}
		if !waiting && r.where != unplaced {
			return fmt.Errorf("job %s is %s but placed", id, j.State)
		}
		q := s.ready[j.Queue]
		switch r.where {
		case inSched:
			if _, ok := q.sched.Get(rkey(r)); !ok {
				return fmt.Errorf("job %s is not in its schedule", id)
			}
		case inLane:
			tg := q.root.kids[j.Task]
			if tg == nil || tg.kids[j.LimitKey] == nil {
				return fmt.Errorf("job %s has no lane", id)
			}
			if _, ok := tg.kids[j.LimitKey].jobs.Get(rkey(r)); !ok {
				return fmt.Errorf("job %s is not in its lane", id)
			}
		}
	}
	if fmt.Sprint(taskRun) != fmt.Sprint(s.flow.taskRunning) || fmt.Sprint(keyRun) != fmt.Sprint(s.flow.keyRunning) || fmt.Sprint(queueRun) != fmt.Sprint(s.flow.queueRunning) {
		return fmt.Errorf("running counters %v %v %v, want %v %v %v", s.flow.taskRunning, s.flow.keyRunning, s.flow.queueRunning, taskRun, keyRun, queueRun)
	}
	for queue, q := range s.ready {
		n := q.sched.Len()
		for task, tg := range q.root.kids {
			if tg.parent != q.root || tg.queue != queue || tg.task != task {
				return fmt.Errorf("task gate %s/%s is misnamed", queue, task)
			}
			if s.flow.taskGates[task][queue] != tg {
				return fmt.Errorf("task gate %s/%s is not registered", queue, task)
			}
			for key, l := range tg.kids {
				n += l.jobs.Len()
				if l.jobs.Len() == 0 {
					return fmt.Errorf("lane %s/%s/%s is empty", queue, task, key)
				}
				if key != "" && s.flow.laneGates[taskKey{task, key}][queue] != l {
					return fmt.Errorf("lane %s/%s/%s is not registered", queue, task, key)
				}
				if err := checkPost(l); err != nil {
					return err
				}
				if l.closed && key == "" {
					return fmt.Errorf("the unkeyed lane of %s/%s is closed", queue, task)
				}
			}
			if err := checkPost(tg); err != nil {
				return err
			}
		}
		if n == 0 {
			return fmt.Errorf("queue %s has an empty ready index", queue)
		}
	}
	// A closed gate is saturated.
	for task, gs := range s.flow.closed {
		cfg := s.taskCfg[task]
		for g := range gs {
			if !g.closed {
				return fmt.Errorf("gate %s/%s/%s is listed closed but open", g.queue, g.task, g.key)
			}
			rate := s.flow.rateSec == floorDiv(micros(s.now), 1e6)
			var full bool
			if g.key == "" {
				full = cfg.MaxRunning > 0 && s.flow.taskRunning[task] >= int64(cfg.MaxRunning) ||
					rate && cfg.MaxStartsPerSecond > 0 && s.flow.taskStarts[task] >= cfg.MaxStartsPerSecond
			} else {
				full = cfg.MaxRunningPerKey > 0 && s.flow.keyRunning[task][g.key] >= int64(cfg.MaxRunningPerKey) ||
					rate && cfg.MaxStartsPerSecondPerKey > 0 && s.flow.keyStarts[taskKey{task, g.key}] >= cfg.MaxStartsPerSecondPerKey
			}
			_, rateClosed := s.flow.rateClosed[g]
			if !full && !(rateClosed && !rate) {
				return fmt.Errorf("gate %s/%s/%s is closed but has room", g.queue, g.task, g.key)
			}
		}
	}
	return nil
}

// checkPost checks that an open gate posts its best entry in its parent
// and a closed one posts nothing.
func checkPost(g *gate) error {
	best, ok := g.jobs.Min()
	switch {
	case g.closed && g.isPosted:
		return fmt.Errorf("closed gate %s/%s/%s posts %v", g.queue, g.task, g.key, g.posted)
	case !g.closed && ok && (!g.isPosted || g.posted != best):
		return fmt.Errorf("gate %s/%s/%s posts %v (%v), its best is %v", g.queue, g.task, g.key, g.posted, g.isPosted, best)
	case g.isPosted:
		if _, in := g.parent.jobs.Get(g.posted); !in {
			return fmt.Errorf("gate %s/%s/%s's posted entry is not in its parent", g.queue, g.task, g.key)
		}
	}
	return nil
}

func (m *flowModel) pick(states ...core.JobState) *jobRec {
	s := m.primary()
	var ids []string
	for id, r := range s.jobs {
		if slices.Contains(states, r.job.State) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	sort.Strings(ids)
	return s.jobs[ids[m.rnd.IntN(len(ids))]]
}

func (m *flowModel) step() {
	t, rnd := m.t, m.rnd
	tasks, queues := []string{"a", "b"}, []string{"q1", "q2"}
	keys, seqs := []string{"", "k1", "k2", "k3"}, []string{"", "", "s1", "s2"}
	switch n := rnd.IntN(100); {
	case n < 25:
		reqs := make([]core.EnqueueRequest, 1+rnd.IntN(3))
		for i := range reqs {
			r := core.EnqueueRequest{Queue: queues[rnd.IntN(2)], Task: tasks[rnd.IntN(2)], LimitKey: keys[rnd.IntN(4)],
				SequenceKey: seqs[rnd.IntN(4)], Priority: rnd.IntN(2), MaxAttempts: 1 + rnd.IntN(2)}
			if rnd.IntN(4) == 0 {
				r.RunAt = m.now.Add(time.Duration(rnd.IntN(3000)) * time.Millisecond)
			}
			if rnd.IntN(3) == 0 {
				r.IdempotencyKey = fmt.Sprint("id", rnd.IntN(4))
				r.Unique = []core.UniqueMode{core.UniqueUntilRetention, core.UniqueWhileActive, core.UniqueByPeriod}[rnd.IntN(3)]
				if r.Unique == core.UniqueByPeriod {
					r.UniquePeriod = 2 * time.Second
				}
			}
			reqs[i] = r
		}
		jobs, err := core.PrepareJobs(reqs, m.now, core.DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		m.apply(command{Op: opEnqueue, Jobs: jobs})
	case n < 50:
		queue, limit := queues[rnd.IntN(2)], 1+rnd.IntN(4)
		s := m.primary()
		want := m.refClaim(s, queue, limit)
		out := m.apply(command{Op: opClaim, Queue: queue, WorkerID: "w", Limit: limit, TTL: 5 * time.Second})
		if got := jobIDsOf(out.jobs); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("claim %d of %d in %s at %v handed out %v, the rules give %v", m.req, limit, queue, m.now, got, want)
		}
		if sec := floorDiv(micros(m.now), 1e6); sec != m.startSec {
			m.startSec, m.taskStarts, m.keyStarts = sec, map[string]int{}, map[taskKey]int{}
		}
		for _, j := range out.jobs {
			m.taskStarts[j.Task]++
			m.keyStarts[taskKey{j.Task, j.LimitKey}]++
		}
		m.claimed += len(out.jobs)
	case n < 60:
		if r := m.pick(core.StateRunning); r != nil {
			m.apply(command{Op: opComplete, Completions: []completionItem{{Lease: r.job.Lease}}})
		}
	case n < 67:
		if r := m.pick(core.StateRunning); r != nil {
			m.apply(command{Op: opFail, Lease: r.job.Lease, Error: "x", Terminal: rnd.IntN(2) == 0})
		}
	case n < 72:
		if r := m.pick(core.StateRunning); r != nil {
			m.apply(command{Op: opSleep, Lease: r.job.Lease, Until: m.now.Add(time.Duration(rnd.IntN(2000)) * time.Millisecond)})
		}
	case n < 76:
		if r := m.pick(core.StateQueued, core.StateRunning, core.StateSleeping); r != nil {
			m.apply(command{Op: opCancel, JobID: r.job.ID, Reason: "x"})
		}
	case n < 81:
		if r := m.pick(core.StateFailed, core.StateCancelled); r != nil {
			m.apply(command{Op: opRetry, JobID: r.job.ID})
		}
	case n < 84:
		if r := m.pick(core.StateQueued, core.StateRunning, core.StateSleeping, core.StateFailed, core.StateSucceeded); r != nil {
			m.apply(command{Op: opDeleteJob, V: 2, JobID: r.job.ID, Force: true})
		}
	case n < 87:
		m.apply(command{Op: opRescue, Limit: 1 + rnd.IntN(5)})
	case n < 91:
		cfg := core.TaskConfig{Task: tasks[rnd.IntN(2)], MaxRunning: rnd.IntN(4), MaxRunningPerKey: rnd.IntN(3),
			MaxStartsPerSecond: rnd.IntN(4), MaxStartsPerSecondPerKey: rnd.IntN(3), HoldSequenceOnFailure: rnd.IntN(2) == 0}
		m.apply(command{Op: opTaskConfig, TaskConfig: &cfg})
	case n < 93:
		cfg := core.QueueConfig{Queue: queues[rnd.IntN(2)], MaxRunning: rnd.IntN(4)}
		m.apply(command{Op: opQueueCfg, QueueConfig: &cfg})
	case n < 95:
		m.apply(command{Op: opCleanup, Limit: 5, Before: m.now.Add(-2 * time.Second)})
	case n < 97:
		data, err := m.primary().encodeSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		rebuilt, err := decodeSnapshot(data)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := digest(rebuilt), digest(m.primary()); got != want {
			t.Fatalf("the snapshot rebuilt a different state:\n%s", lineDiff(got, want))
		}
		if err := checkFlowIndexes(rebuilt); err != nil {
			t.Fatalf("rebuilt replica: %v", err)
		}
		m.replicas = append(m.replicas, rebuilt)
		if len(m.replicas) > 4 {
			m.replicas = append(m.replicas[:1], m.replicas[2:]...)
		}
	default:
		m.now = m.now.Add(time.Duration(rnd.IntN(1500)) * time.Millisecond)
	}
	m.now = m.now.Add(time.Duration(rnd.IntN(200)) * time.Millisecond)
}

func lineDiff(got, want string) string {
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for _, l := range wl {
		if !slices.Contains(gl, l) {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range gl {
		if !slices.Contains(wl, l) {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}

// TestFlowModel: random commands, every claim decided as the rules decide
// it from scratch, the indexes consistent after every command, snapshots
// that rebuild the same state, and rebuilt replicas that go on deciding as
// the one that replayed everything.
func TestFlowModel(t *testing.T) {
	for seed := range uint64(modelSeeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			m := &flowModel{t: t, rnd: rand.New(rand.NewPCG(seed, 7)), now: time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC),
				replicas: []*state{newState()}, taskStarts: map[string]int{}, keyStarts: map[taskKey]int{}}
			for range 1000 {
				m.step()
			}
			want := digest(m.primary())
			for i, r := range m.replicas[1:] {
				if got := digest(r); got != want {
					t.Fatalf("replica %d drifted:\n%s", i+1, lineDiff(got, want))
				}
			}
			if m.claimed == 0 {
				t.Fatal("no claim handed out a job")
			}
			t.Logf("%d jobs handed out, %d jobs held", m.claimed, len(m.primary().jobs))
		})
	}
}
