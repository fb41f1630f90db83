package mem

import (
	"time"

	"github.com/boson-go/boson/core"
)

// seqState is one sequence of a queue: the jobs of the queue that share a
// SequenceKey. Its members are its active (queued, running, sleeping) jobs
// in id order; only the first of them may run, and only when no member is
// running or sleeping but itself and no failed job holds the sequence.
// The other members wait outside the ready index (flowRec.waiting) until
// advance lets the new first one in.
type seqState struct {
	key     string
	members recHeap // active members by id
	active  int     // running or sleeping members
	holding int     // failed jobs that hold the sequence
	refs    int     // retained jobs of the sequence
}

// seq returns the sequence of q named key, making it on first use.
func (q *queueState) seq(key string) *seqState {
	if q.seqs == nil {
		q.seqs = map[string]*seqState{}
	}
	sq := q.seqs[key]
	if sq == nil {
		sq = &seqState{key: key, members: recHeap{slot: flowMember}}
		q.seqs[key] = sq
	}
	return sq
}

func runningOrSleeping(st core.JobState) bool {
	return st == core.StateRunning || st == core.StateSleeping
}

func activeState(st core.JobState) bool {
	return st == core.StateQueued || runningOrSleeping(st)
}

// move updates the sequence for r's move from state old to st ("" for a
// job that is new, or deleted). A job that fails while its task's config
// says HoldSequenceOnFailure holds the sequence until it leaves the
// failed state.
func (sq *seqState) move(r *jobRec, old, st core.JobState) {
	f := r.fl
	if runningOrSleeping(old) {
		sq.active--
	}
	if runningOrSleeping(st) {
		sq.active++
	}
	switch was, is := activeState(old), activeState(st); {
	case was && !is:
		sq.members.remove(r)
	case !was && is:
		sq.members.push(seqEnt(r))
	}
	if f.holding && st != core.StateFailed {
		f.holding = false
		sq.holding--
	}
	if st == core.StateFailed && old != core.StateFailed && r.t.flow.hold {
		f.holding = true
		sq.holding++
	}
}

// admits reports whether r, an active member, may run now.
func (sq *seqState) admits(r *jobRec) bool {
	if sq.holding > 0 || sq.members.peek() != r {
		return false
	}
	self := 0
	if runningOrSleeping(r.job.State) {
		self = 1
	}
	return sq.active == self
}

// advance lets the first member of sq into the claim path when it waits
// for the sequence and the sequence now admits it.
func (s *store) advance(sq *seqState, now time.Time) {
	h := sq.members.peek()
	if h != nil && h.fl.waiting && sq.admits(h) {
		h.fl.waiting = false
		s.route(h, stageKey, now)
	}
}
