package mem

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/boson-go/boson/core"
)

// Flow control (core.FlowController): concurrency limits and start rates
// at claim, sequences, unique modes.
//
// Running counts are kept as they change: per queue and per task in their
// state counters, per (task, limit key) in a keyState, all moved by attach
// and delete in the same step as the transition. A claim never counts jobs.
//
// A job that a rule holds back is kept out of its queue's ready index, so
// that a claim never scans past it: a sequence keeps every active member
// in id order and lets only its head into the ready index, and only when
// the sequence is free; a gate (one per queue for a limited task, and one
// per queue and limit key for a task with per-key limits) parks the jobs
// it holds back in claim order and admits the first of them when a slot
// frees (a job of its task or key leaves the running state, a start-rate
// window passes, the config changes), in the transition that frees it. A
// gate counts the jobs it admitted that are still waiting to be claimed
// ("tokens"), so that it admits no more than the free slots. The gates
// are per queue so that a queue without workers never holds the slots of
// another; since slots are shared across queues, a claim still checks the
// counters exactly before it hands out a job, and parks the job again when
// another queue took the slot meanwhile. The cost of a saturated key or a
// blocked sequence is then paid once per job when it is held back and
// once when it is admitted, never at each claim.

var _ core.FlowController = (*Backend)(nil)

// flowLimits are the flow limits of a task's stored config.
type flowLimits struct {
	maxRunning, perKey, rate, rateKey int
	hold                              bool
}

func limitsOf(c core.TaskConfig) flowLimits {
	return flowLimits{
		maxRunning: c.MaxRunning,
		perKey:     c.MaxRunningPerKey,
		rate:       c.MaxStartsPerSecond,
		rateKey:    c.MaxStartsPerSecondPerKey,
		hold:       c.HoldSequenceOnFailure,
	}
}

// taskGated reports whether the task's jobs pass a task gate.
func (l *flowLimits) taskGated() bool { return l.maxRunning > 0 || l.rate > 0 }

// keyGated reports whether the task's keyed jobs pass a key gate.
func (l *flowLimits) keyGated() bool { return l.perKey > 0 || l.rateKey > 0 }

// window counts the claims within one second of the store's clock.
type window struct {
	sec int64
	n   int
}

// count returns the claims within the second of now.
func (w *window) count(now time.Time) int {
	if w.sec != now.Unix() {
		return 0
	}
	return w.n
}

// add counts one claim at now.
func (w *window) add(now time.Time) {
	if s := now.Unix(); w.sec != s {
		w.sec, w.n = s, 0
	}
	w.n++
}

// keyState is one limit key of a task.
type keyState struct {
	name    string
	t       *taskState
	running int64
	starts  window
	refs    int     // retained jobs with the key
	gates   []*gate // its gates, one per queue that has one
}

// flowRec is the flow state of a job that has a limit or sequence key or
// met a gate.
type flowRec struct {
	key *keyState
	sq  *seqState
	pos [nFlowSlots]int32 // positions in the recHeaps, by slot; -1 when absent
	// park is the gate whose park heap holds the job, if any.
	park *gate
	// keyTok and taskTok are the gates that admitted the job and count it
	// until it is claimed or leaves.
	keyTok, taskTok *gate
	// waiting: due, and held back by its sequence.
	waiting bool
	// holding: failed, and holding its sequence.
	holding bool
}

// flowOf returns r's flow state, making it on first use.
func (s *store) flowOf(r *jobRec) *flowRec {
	if r.fl == nil {
		r.fl = &flowRec{pos: [nFlowSlots]int32{-1, -1, -1, -1}}
	}
	return r.fl
}

// key returns the state of one limit key of t, making it on first use.
func (t *taskState) key(name string) *keyState {
	if t.keys == nil {
		t.keys = map[string]*keyState{}
	}
	k := t.keys[name]
	if k == nil {
		k = &keyState{name: name, t: t}
		t.keys[name] = k
	}
	return k
}

// release forgets k once no job names it, no gate of it is left and its
// start-rate window has passed: a key forgotten sooner would count its
// claims of this second again from zero. Keys that still count claims of
// this second linger until a later release sweeps them.
func (t *taskState) release(k *keyState, now time.Time) {
	sec := now.Unix()
	if n := len(t.linger); n > 0 {
		keep := t.linger[:0]
		for _, x := range t.linger {
			switch {
			case x.refs > 0 || x.running > 0 || len(x.gates) > 0 || t.keys[x.name] != x:
			case x.starts.sec >= sec:
				keep = append(keep, x)
			default:
				delete(t.keys, x.name)
			}
		}
		clear(t.linger[len(keep):])
		t.linger = keep
	}
	if k.refs > 0 || k.running > 0 || len(k.gates) > 0 || t.keys[k.name] != k {
		return
	}
	if k.starts.sec >= sec && k.starts.n > 0 {
		if !slices.Contains(t.linger, k) {
			t.linger = append(t.linger, k)
		}
		return
	}
	delete(t.keys, k.name)
}

// flowInsert resolves the keys of a new job's record.
func (s *store) flowInsert(r *jobRec) {
	j := &r.job
	f := s.flowOf(r)
	if j.LimitKey != "" {
		f.key = r.t.key(j.LimitKey)
		f.key.refs++
	}
	if j.SequenceKey != "" {
		f.sq = r.q.seq(j.SequenceKey)
		f.sq.refs++
	}
}

// flowMove updates the flow counters of r, which moved from state old to
// its current state: the running count of its key and its sequence's
// members. It runs before r is filed in its new place.
func (s *store) flowMove(r *jobRec, old core.JobState) {
	f := r.fl
	st := r.job.State
	if k := f.key; k != nil {
		if old == core.StateRunning {
			k.running--
		}
		if st == core.StateRunning {
			k.running++
		}
	}
	if sq := f.sq; sq != nil {
		sq.move(r, old, st)
	}
}

// freed runs after r left the running state (or was deleted while
// running): the slots of its task and key admit their next jobs.
func (s *store) freed(r *jobRec, now time.Time) {
	for _, g := range r.t.gates {
		s.fill(g, now)
	}
	if r.fl != nil && r.fl.key != nil {
		for _, g := range r.fl.key.gates {
			s.fill(g, now)
		}
	}
}

// flowDelete forgets the flow state of a deleted job that was in state st.
func (s *store) flowDelete(r *jobRec, st core.JobState, now time.Time) {
	f := r.fl
	if k := f.key; k != nil {
		if st == core.StateRunning {
			k.running--
		}
		k.refs--
		k.t.release(k, now)
	}
	if sq := f.sq; sq != nil {
		sq.move(r, st, "")
		if sq.refs--; sq.refs == 0 {
			delete(r.q.seqs, sq.key)
		} else {
			s.advance(sq, now)
		}
	}
}

// RunningByKey returns the running jobs of task grouped by LimitKey, most
// running first (ties by key), at most limit groups (0 means
// core.DefaultPageSize). Jobs without a limit key are left out. It reads
// the counters kept per key: O(k log k) for the k keys of the task.
func (b *Backend) RunningByKey(ctx context.Context, task string, limit int) ([]core.KeyCount, error) {
	if err := b.usable(ctx); err != nil {
		return nil, err
	}
	if err := core.ValidateRunningByKey(task, limit); err != nil {
		return nil, err
	}
	if limit == 0 {
		limit = core.DefaultPageSize
	}
	if err := b.lock(ctx); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	out := []core.KeyCount{}
	if t := b.s.tasks[task]; t != nil {
		for name, k := range t.keys {
			if k.running > 0 {
				out = append(out, core.KeyCount{Key: name, Running: k.running})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Running != out[j].Running {
			return out[i].Running > out[j].Running
		}
		return out[i].Key < out[j].Key
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// holdsKey reports whether r, a retained job, holds its idempotency key at
// now under its unique mode (core.HoldsKey).
func holdsKey(r *jobRec, now time.Time) bool {
	if r == nil || r.deleted {
		return false
	}
	if r.jobBody != nil {
		return core.HoldsKey(r.job, now)
	}
	return core.HoldsKey(r.view().job, now)
}

// retake gives the idempotency key of j, a job that Retry queues again,
// back to r when its mode holds the key only while active, or fails with
// an error wrapping core.ErrIdempotencyConflict when another job holds it.
func (s *store) retake(r *jobRec, j *core.Job, now time.Time) error {
	if j.IdempotencyKey == "" || j.Unique != core.UniqueWhileActive {
		return nil
	}
	k := idemKey{j.Queue, j.IdempotencyKey}
	if cur := s.idem[k]; cur != nil && cur != r && holdsKey(cur, now) {
		return fmt.Errorf("%w: queue %q key %q is held by job %s; job %s cannot take it again",
			core.ErrIdempotencyConflict, j.Queue, j.IdempotencyKey, cur.id, j.ID)
	}
	s.idem[k] = r
	return nil
}
