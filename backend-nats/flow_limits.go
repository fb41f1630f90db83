package natsq

import (
	"maps"
	"sort"

	"github.com/boson-go/boson/core"
)

// Concurrency limits and start rates. The replica counts the running jobs
// of every task, (task, limit key) and queue, and the claims of every task
// and (task, limit key) within the current second of the decision clock;
// index and unindex keep the running counts, so every transition into or
// out of running (claim, complete, fail, sleep, cancel, rescue, delete)
// moves them in the same step. A claim consults the counters, never the
// jobs.

type taskKey struct{ task, key string }

// flowState is the replica's flow-control bookkeeping. Like the rest of
// the state it is a deterministic function of the log, except for which
// gates are closed, which only spares claims work (see flow_ready.go).
type flowState struct {
	taskRunning  map[string]int64
	keyRunning   map[string]map[string]int64 // task -> limit key -> running
	queueRunning map[string]int64

	// rateSec is the second (Unix) the start counters are for.
	rateSec    int64
	taskStarts map[string]int
	keyStarts  map[taskKey]int

	// The gates of every queue, to reopen them when a slot frees.
	taskGates map[string]map[string]*gate  // task -> queue -> task gate
	laneGates map[taskKey]map[string]*gate // (task, key) -> queue -> lane, keyed lanes only
	// closed holds the closed gates of each task; rateClosed those closed
	// while a start rate was spent, reopened when the second ends.
	closed     map[string]map[*gate]struct{}
	rateClosed map[*gate]struct{}
}

func newFlowState() flowState {
	return flowState{
		taskRunning:  map[string]int64{},
		keyRunning:   map[string]map[string]int64{},
		queueRunning: map[string]int64{},
		taskStarts:   map[string]int{},
		keyStarts:    map[taskKey]int{},
		taskGates:    map[string]map[string]*gate{},
		laneGates:    map[taskKey]map[string]*gate{},
		closed:       map[string]map[*gate]struct{}{},
		rateClosed:   map[*gate]struct{}{},
	}
}

func (f *flowState) addGate(g *gate) {
	if g.key == "" && g.parent != nil && g.parent.parent == nil {
		m := f.taskGates[g.task]
		if m == nil {
			m = map[string]*gate{}
			f.taskGates[g.task] = m
		}
		m[g.queue] = g
		return
	}
	if g.key != "" {
		k := taskKey{g.task, g.key}
		m := f.laneGates[k]
		if m == nil {
			m = map[string]*gate{}
			f.laneGates[k] = m
		}
		m[g.queue] = g
	}
}

func (f *flowState) dropGate(g *gate) {
	if g.closed {
		f.unclose(g)
	}
	if g.key == "" && g.parent != nil && g.parent.parent == nil {
		if m := f.taskGates[g.task]; m != nil {
			delete(m, g.queue)
			if len(m) == 0 {
				delete(f.taskGates, g.task)
			}
		}
		return
	}
	if g.key != "" {
		k := taskKey{g.task, g.key}
		if m := f.laneGates[k]; m != nil {
			delete(m, g.queue)
			if len(m) == 0 {
				delete(f.laneGates, k)
			}
		}
	}
}

func (f *flowState) unclose(g *gate) {
	g.closed = false
	if m := f.closed[g.task]; m != nil {
		delete(m, g)
		if len(m) == 0 {
			delete(f.closed, g.task)
		}
	}
	delete(f.rateClosed, g)
}

// closeGate closes a saturated gate; rate says a start rate is spent.
func (s *state) closeGate(g *gate, rate bool) {
	f := &s.flow
	if !g.closed {
		g.closed = true
		m := f.closed[g.task]
		if m == nil {
			m = map[*gate]struct{}{}
			f.closed[g.task] = m
		}
		m[g] = struct{}{}
		g.repost()
	}
	if rate {
		f.rateClosed[g] = struct{}{}
	}
}

// reopen opens a closed gate and wakes its queue's workers.
func (s *state) reopen(g *gate) {
	if !g.closed {
		return
	}
	s.flow.unclose(g)
	g.repost()
	s.touched[g.queue] = struct{}{}
}

// runningChanged counts a job of j's task, key and queue into (d = 1) or
// out of (d = -1) running. A job leaving running frees a slot: the gates
// of its task and key reopen, in every queue.
func (s *state) runningChanged(j *core.Job, d int64) {
	f := &s.flow
	addCount(f.taskRunning, j.Task, d)
	addCount(f.queueRunning, j.Queue, d)
	if j.LimitKey != "" {
		m := f.keyRunning[j.Task]
		if m == nil {
			m = map[string]int64{}
			f.keyRunning[j.Task] = m
		}
		addCount(m, j.LimitKey, d)
		if len(m) == 0 {
			delete(f.keyRunning, j.Task)
		}
	}
	if d < 0 && len(f.closed[j.Task]) > 0 {
		for _, g := range f.taskGates[j.Task] {
			s.reopen(g)
		}
		if j.LimitKey != "" {
			for _, g := range f.laneGates[taskKey{j.Task, j.LimitKey}] {
				s.reopen(g)
			}
		}
	}
}

func addCount[K comparable](m map[K]int64, k K, d int64) {
	if m[k] += d; m[k] <= 0 {
		delete(m, k)
	}
}

// configChanged reopens every closed gate of task: its new limits may
// leave room.
func (s *state) configChanged(task string) {
	for g := range s.flow.closed[task] {
		s.reopen(g)
	}
}

// rollRate starts the start counters of the second that holds now,
// reopening the gates closed for a spent rate when the second changed. The
// counters never go back to an earlier second: a claim stamped by a clock
// behind the one that opened the current second (another claimer's, or
// its own command overtaken in the log) must not reset them, or the next
// claim of the current second would count its starts afresh.
func (s *state) rollRate(nowMicros int64) {
	f := &s.flow
	sec := floorDiv(nowMicros, 1e6)
	if sec <= f.rateSec {
		return
	}
	f.rateSec = sec
	clear(f.taskStarts)
	clear(f.keyStarts)
	for g := range f.rateClosed {
		s.reopen(g)
	}
	clear(f.rateClosed)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// counted records a claim of j in the start counters of the current second.
func (s *state) counted(j *core.Job) {
	s.flow.taskStarts[j.Task]++
	if j.LimitKey != "" {
		s.flow.keyStarts[taskKey{j.Task, j.LimitKey}]++
	}
}

// heldBack returns the gate that holds job j of queue q back at claim, and
// whether a spent start rate is the reason; nil when the task's and the
// key's limits leave room for j. The queue's own MaxRunning is checked by
// the claim itself.
func (s *state) heldBack(q *queueReady, j *core.Job) (*gate, bool) {
	cfg, ok := s.taskCfg[j.Task]
	if !ok {
		return nil, false
	}
	f := &s.flow
	taskRate := cfg.MaxStartsPerSecond > 0 && f.taskStarts[j.Task] >= cfg.MaxStartsPerSecond
	if taskRate || cfg.MaxRunning > 0 && f.taskRunning[j.Task] >= int64(cfg.MaxRunning) {
		return q.root.kids[j.Task], taskRate
	}
	if j.LimitKey == "" {
		return nil, false
	}
	keyRate := cfg.MaxStartsPerSecondPerKey > 0 && f.keyStarts[taskKey{j.Task, j.LimitKey}] >= cfg.MaxStartsPerSecondPerKey
	if keyRate || cfg.MaxRunningPerKey > 0 && f.keyRunning[j.Task][j.LimitKey] >= int64(cfg.MaxRunningPerKey) {
		return q.root.kids[j.Task].kids[j.LimitKey], keyRate
	}
	return nil, false
}

// lateForRate reports whether a claim at nowMicros is stamped before the
// second the start counters are for: its own second's counts are gone, so
// it may not start a job that a start rate governs (see rollRate).
func (s *state) lateForRate(nowMicros int64) bool {
	return floorDiv(nowMicros, 1e6) < s.flow.rateSec
}

// rateGoverned reports whether a start rate of j's task applies to j.
func (s *state) rateGoverned(j *core.Job) bool {
	cfg, ok := s.taskCfg[j.Task]
	return ok && (cfg.MaxStartsPerSecond > 0 || j.LimitKey != "" && cfg.MaxStartsPerSecondPerKey > 0)
}

// queueFull reports whether queue runs as many jobs as its MaxRunning.
func (s *state) queueFull(queue string) bool {
	n := s.queueCfg[queue].MaxRunning
	return n > 0 && s.flow.queueRunning[queue] >= int64(n)
}

// snapshotStarts returns the start counters for a snapshot, nil when none
// was counted.
func (f *flowState) snapshotStarts() *snapStarts {
	if len(f.taskStarts) == 0 && len(f.keyStarts) == 0 {
		return nil
	}
	st := &snapStarts{RateSec: f.rateSec, Tasks: maps.Clone(f.taskStarts)}
	for k, n := range f.keyStarts {
		st.Keys = append(st.Keys, snapKeyCount{Task: k.task, Key: k.key, N: n})
	}
	sort.Slice(st.Keys, func(i, j int) bool {
		if st.Keys[i].Task != st.Keys[j].Task {
			return st.Keys[i].Task < st.Keys[j].Task
		}
		return st.Keys[i].Key < st.Keys[j].Key
	})
	return st
}

// restoreStarts loads the start counters of a snapshot.
func (f *flowState) restoreStarts(st *snapStarts) {
	if st == nil {
		return
	}
	f.rateSec = st.RateSec
	maps.Copy(f.taskStarts, st.Tasks)
	for _, k := range st.Keys {
		f.keyStarts[taskKey{k.Task, k.Key}] = k.N
	}
}
