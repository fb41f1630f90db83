package natsq

import (
	"github.com/boson-go/boson/core"
	"github.com/google/btree"
)

// Sequences. The jobs of one queue that share a SequenceKey run one at a
// time in id order. A job of a sequence is claimable only when no job of
// its sequence with a smaller id is queued, running or sleeping, no job of
// the sequence fails and holds it (a terminal failure of a task with
// HoldSequenceOnFailure, until retried or deleted), and no other job of the
// sequence is running or sleeping. Each sequence admits at most one job
// into the ready index, its head; the others are not placed at all, so a
// blocked sequence costs a claim nothing. index and unindex keep the
// sequence's members and counts, and every change re-decides its head.

type seqKey struct{ queue, key string }

// sequence is the bookkeeping of one sequence.
type sequence struct {
	// members holds the ids of the sequence's queued, running and sleeping
	// jobs.
	members *btree.BTreeG[string]
	// busy counts its running and sleeping jobs; holding its failed jobs
	// that hold it.
	busy, holding int
	// admitted is the id of the job the sequence placed in the ready
	// index, or "".
	admitted string
}

func (s *state) seqOf(j *core.Job) (seqKey, *sequence) {
	k := seqKey{j.Queue, j.SequenceKey}
	q := s.seqs[k]
	if q == nil {
		q = &sequence{members: btree.NewOrderedG[string](16)}
		s.seqs[k] = q
	}
	return k, q
}

// seqIndex counts r into its sequence and re-decides the head.
func (s *state) seqIndex(r *jobRec) {
	j := &r.job
	k, q := s.seqOf(j)
	switch {
	case j.State.Active():
		q.members.ReplaceOrInsert(j.ID)
		if j.State == core.StateRunning || j.State == core.StateSleeping {
			q.busy++
		}
	case j.State == core.StateFailed && r.holdsSeq:
		q.holding++
	}
	s.seqAdmit(k, q)
}

// seqUnindex takes r out of its sequence's counts. The head is re-decided
// by the index that follows, or by seqRelease when the job goes.
func (s *state) seqUnindex(r *jobRec) {
	j := &r.job
	q := s.seqs[seqKey{j.Queue, j.SequenceKey}]
	if q == nil {
		return
	}
	switch {
	case j.State.Active():
		q.members.Delete(j.ID)
		if j.State == core.StateRunning || j.State == core.StateSleeping {
			q.busy--
		}
	case j.State == core.StateFailed && r.holdsSeq:
		q.holding--
	}
	if q.admitted == j.ID {
		q.admitted = ""
	}
}

// seqRelease re-decides the head of the sequence of a job that was
// removed.
func (s *state) seqRelease(j *core.Job) {
	k := seqKey{j.Queue, j.SequenceKey}
	if q := s.seqs[k]; q != nil {
		s.seqAdmit(k, q)
	}
}

// seqAdmit places the job the sequence may run next, if any, and takes
// out the one it admitted before when that changed.
func (s *state) seqAdmit(k seqKey, q *sequence) {
	want := ""
	if head, ok := q.members.Min(); ok && q.holding == 0 {
		switch r := s.jobs[head]; {
		case r == nil:
		case r.job.State == core.StateQueued && q.busy == 0,
			r.job.State == core.StateSleeping && q.busy == 1:
			want = head
		}
	}
	if want != q.admitted {
		if q.admitted != "" {
			if r := s.jobs[q.admitted]; r != nil && r.where != unplaced {
				s.unplace(r)
			}
		}
		q.admitted = want
		if want != "" {
			if r := s.jobs[want]; r.where == unplaced {
				s.place(r)
			}
		}
	}
	if q.members.Len() == 0 && q.holding == 0 {
		delete(s.seqs, k)
	}
}

// holdsOnFailure reports whether a job that now fails terminally keeps
// holding its sequence, by its task's config at this moment.
func (s *state) holdsOnFailure(r *jobRec) bool {
	return r.job.SequenceKey != "" && s.taskCfg[r.job.Task].HoldSequenceOnFailure
}
