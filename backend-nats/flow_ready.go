package natsq

import (
	"github.com/google/btree"
)

// The ready index. Each queue's queued and sleeping jobs that a claim may
// hand out are held in a tree of gates, three levels deep, so that a claim
// finds the best job it may take without walking past the jobs a flow
// limit holds back:
//
//   - a lane per (task, limit key) holds its jobs in claim order
//     (priority, run-at, id); unkeyed jobs share the lane of key "";
//   - a task gate per task holds the head (best job) of each of its open
//     lanes;
//   - the queue's root holds the head of each open task gate.
//
// The best entry of the root is the best job of the queue that no known
// limit holds back. A gate that a claim finds saturated (the task's
// MaxRunning or start rate, a key's MaxRunningPerKey or start rate) is
// closed: its head leaves its parent, so later claims skip all of its jobs
// at once, whatever their number. Every transition that can free a slot
// reopens the closed gates it concerns (see flow_limits.go). A closed gate
// is always saturated; an open one may be too, and a claim that meets it
// closes it then. Claim outcomes thus depend only on the jobs, the
// counters and the configs, never on which gates happen to be open, so a
// replica rebuilt from a snapshot (every gate open) decides as one that
// replayed the log.
//
// Jobs due later than the time they were placed at wait in the queue's
// schedule, ordered by run-at, and a claim first moves the ones due by its
// time into their lanes; the lanes then hold due jobs only, so the best
// entry of the root is the job to take. Jobs of a sequence are placed only
// while their sequence admits them (see flow_seq.go).

// Where a queued or sleeping job is placed.
const (
	unplaced uint8 = iota // not claimable: its sequence holds it back
	inSched               // waiting for its run-at in the queue's schedule
	inLane                // in its lane
)

// gate is one node of a queue's ready index: the root, a task gate or a
// lane.
type gate struct {
	parent *gate
	// task and key name the gate (key only for lanes); queue its queue.
	queue, task, key string
	// jobs holds the gate's entries: a lane's jobs, or the posted heads of
	// the gate's children.
	jobs *btree.BTreeG[readyKey]
	// kids are a root's task gates by task, or a task gate's lanes by key.
	kids map[string]*gate
	// posted is the entry this gate posted in its parent, when isPosted.
	posted   readyKey
	isPosted bool
	// closed: a claim found the gate saturated; it posts nothing until a
	// transition reopens it.
	closed bool
}

// queueReady is the ready index of one queue.
type queueReady struct {
	root  *gate
	sched *btree.BTreeG[readyKey]
}

func schedLess(a, b readyKey) bool {
	if a.runAt != b.runAt {
		return a.runAt < b.runAt
	}
	return a.id < b.id
}

func newGate(parent *gate, queue, task, key string) *gate {
	return &gate{parent: parent, queue: queue, task: task, key: key, jobs: btree.NewG(16, readyLess)}
}

// readyOf returns the ready index of queue, or nil when it has none.
func (s *state) readyOf(queue string) *queueReady { return s.ready[queue] }

// queueReady returns the ready index of queue, creating it.
func (s *state) queueReady(queue string) *queueReady {
	q := s.readyOf(queue)
	if q == nil {
		q = &queueReady{root: newGate(nil, queue, "", ""), sched: btree.NewG(16, schedLess)}
		q.root.kids = map[string]*gate{}
		s.ready[queue] = q
	}
	return q
}

// lane returns the lane of r's task and limit key in r's queue, creating
// it and its task gate.
func (s *state) lane(q *queueReady, task, key string) *gate {
	tg := q.root.kids[task]
	if tg == nil {
		tg = newGate(q.root, q.root.queue, task, "")
		tg.kids = map[string]*gate{}
		q.root.kids[task] = tg
		s.flow.addGate(tg)
	}
	l := tg.kids[key]
	if l == nil {
		l = newGate(tg, q.root.queue, task, key)
		tg.kids[key] = l
		s.flow.addGate(l)
	}
	return l
}

func rkey(r *jobRec) readyKey {
	return readyKey{r.job.Priority, micros(r.job.RunAt), r.job.ID}
}

// place puts a queued or sleeping job that may be claimed into its queue's
// ready index: into its lane when it is due by the time of the command
// being applied, else into the schedule.
func (s *state) place(r *jobRec) {
	q := s.queueReady(r.job.Queue)
	k := rkey(r)
	if k.runAt > micros(s.now) {
		q.sched.ReplaceOrInsert(k)
		r.where = inSched
		return
	}
	l := s.lane(q, r.job.Task, r.job.LimitKey)
	l.jobs.ReplaceOrInsert(k)
	r.where = inLane
	l.repost()
}

// unplace takes a job out of its queue's ready index.
func (s *state) unplace(r *jobRec) {
	q := s.readyOf(r.job.Queue)
	k := rkey(r)
	switch r.where {
	case inSched:
		q.sched.Delete(k)
	case inLane:
		tg := q.root.kids[r.job.Task]
		l := tg.kids[r.job.LimitKey]
		l.jobs.Delete(k)
		l.repost()
		if l.jobs.Len() == 0 {
			delete(tg.kids, l.key)
			s.flow.dropGate(l)
		}
		if len(tg.kids) == 0 {
			delete(q.root.kids, tg.task)
			s.flow.dropGate(tg)
		}
	}
	r.where = unplaced
	if q.root.jobs.Len() == 0 && len(q.root.kids) == 0 && q.sched.Len() == 0 {
		delete(s.ready, r.job.Queue)
	}
}

// repost makes g's entry in its parent its best job, or none when g is
// closed or empty, and carries the change up.
func (g *gate) repost() {
	for g.parent != nil {
		want, ok := readyKey{}, false
		if !g.closed {
			want, ok = g.jobs.Min()
		}
		if g.isPosted && ok && g.posted == want {
			return
		}
		if g.isPosted {
			g.parent.jobs.Delete(g.posted)
			g.isPosted = false
		}
		if ok {
			g.parent.jobs.ReplaceOrInsert(want)
			g.posted, g.isPosted = want, true
		}
		g = g.parent
	}
}

// promote moves the jobs of q's schedule that are due at now into their
// lanes.
func (s *state) promote(q *queueReady, nowMicros int64) {
	var due []readyKey
	q.sched.Ascend(func(k readyKey) bool {
		if k.runAt > nowMicros {
			return false
		}
		due = append(due, k)
		return true
	})
	for _, k := range due {
		q.sched.Delete(k)
		r := s.jobs[k.id]
		l := s.lane(q, r.job.Task, r.job.LimitKey)
		l.jobs.ReplaceOrInsert(k)
		r.where = inLane
		l.repost()
	}
}

// demote moves a job of a lane that is not due at the claim's time back to
// the schedule. It happens only when a command is decided at a time before
// one applied earlier (a DecisionClock set back).
func (s *state) demote(r *jobRec) {
	s.unplace(r)
	q := s.queueReady(r.job.Queue)
	q.sched.ReplaceOrInsert(rkey(r))
	r.where = inSched
}

// best returns the best open entry of q, if any.
func (q *queueReady) best() (readyKey, bool) {
	return q.root.jobs.Min()
}

// claimable reports whether a claim of queue at now could hand out a job,
// as far as the replica can tell without deciding one: a placed job that
// no closed gate holds back (due, or in the schedule and due by now), or
// gates closed for a start rate whose second is over. An open gate may
// still turn out saturated; the claim then closes it.
func (s *state) claimable(queue string, nowMicros int64) bool {
	q := s.readyOf(queue)
	if q == nil || s.queueFull(queue) {
		return false
	}
	if q.root.jobs.Len() > 0 {
		return true
	}
	if k, ok := q.sched.Min(); ok && k.runAt <= nowMicros {
		return true
	}
	return len(s.flow.rateClosed) > 0 && floorDiv(nowMicros, 1e6) != s.flow.rateSec
}
