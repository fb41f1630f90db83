package mem

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/boson-go/boson/core"
)

// gate holds back the due jobs of one queue that a task's limits (key ==
// nil) or a limit key's limits would let no further, parked in claim
// order, and admits them as slots free. The jobs it let through that have
// not been claimed yet hold its tokens: it admits no more of them than
// its free slots, and always the first ones in claim order (a parked job
// that sorts before a token holder takes its token, see evictFor), so that
// a job it parks never waits behind a later one.
type gate struct {
	q       *queueState
	t       *taskState
	key     *keyState // nil for a task gate
	parked  recHeap   // held back, first in claim order first
	tokens  recHeap   // admitted and not claimed, last in claim order first
	waitSec int64     // the second at which it is due in q.rateWaits, or 0
}

// The stages of the claim path of a due job, in order.
const (
	stageSeq   = iota // its sequence
	stageKey          // its key gate
	stageTask         // its task gate
	stageReady        // the queue's ready index
)

// offer files a due queued or sleeping job: in the ready index, or held
// back by its sequence or a gate.
func (s *store) offer(r *jobRec, now time.Time) {
	if r.fl == nil && !r.t.flow.taskGated() {
		r.q.ready.add(r)
		s.notify(r.job.Queue)
		return
	}
	s.route(r, stageSeq, now)
}

// route moves a due job along its claim path from stage from on, until a
// rule holds it back or it reaches the ready index. A gate that holds no
// job back lets a job through without a token: only a gate that a claim
// found saturated (see claimable) parks the jobs that come to it, so that
// a limit that is never reached costs a lookup per job and nothing more.
func (s *store) route(r *jobRec, from int, now time.Time) {
	lim := &r.t.flow
	if f := r.fl; f != nil {
		if from <= stageSeq && f.sq != nil && !f.sq.admits(r) {
			f.waiting = true
			return
		}
		if from <= stageKey && f.key != nil && lim.keyGated() {
			if g := r.q.keyGates[f.key]; g != nil && g.parked.len() > 0 {
				s.park(g, r, now)
				return
			}
		}
	}
	if from <= stageTask && lim.taskGated() {
		if g := r.q.taskGates[r.t]; g != nil && g.parked.len() > 0 {
			s.park(g, r, now)
			return
		}
	}
	r.q.ready.add(r)
	s.notify(r.job.Queue)
}

// park holds r back in g, then lets g admit what its slots allow (r
// itself when it sorts first and a slot is free).
func (s *store) park(g *gate, r *jobRec, now time.Time) {
	f := s.flowOf(r)
	f.park = g
	g.parked.push(claimEnt(r))
	s.fill(g, now)
}

// room returns g's capacity and whether a start rate bounds it.
func (g *gate) room(now time.Time) (c int, byRate bool) {
	lim := &g.t.flow
	c = math.MaxInt
	limit, rate := lim.maxRunning, lim.rate
	running, starts := g.t.counts.get(core.StateRunning), &g.t.starts
	if g.key != nil {
		limit, rate = lim.perKey, lim.rateKey
		running, starts = g.key.running, &g.key.starts
	}
	if limit > 0 {
		c = limit - int(running)
	}
	if rate > 0 {
		if n := rate - starts.count(now); n <= c {
			c, byRate = n, true
		}
	}
	return c, byRate
}

// fill admits the first parked jobs of g while it has capacity, and hands
// the tokens of its last admitted jobs to parked ones that sort before
// them. When a start rate is what holds its jobs back, g asks to be filled
// again when the next second begins.
func (s *store) fill(g *gate, now time.Time) {
	for g.parked.len() > 0 {
		c, byRate := g.room(now)
		if g.tokens.len() >= c {
			if s.evictFor(g, now) {
				continue
			}
			if byRate {
				s.waitRate(g, now)
			}
			return
		}
		r := g.parked.pop()
		r.fl.park = nil
		s.grant(g, r)
		if g.key != nil {
			s.route(r, stageTask, now)
		} else {
			s.route(r, stageReady, now)
		}
	}
}

// grant gives r a token of g.
func (s *store) grant(g *gate, r *jobRec) {
	f := r.fl
	if g.key != nil {
		f.keyTok = g
	} else {
		f.taskTok = g
	}
	g.tokens.push(claimEnt(r))
}

// revoke takes g's token from r.
func (s *store) revoke(g *gate, r *jobRec) {
	f := r.fl
	if g.key != nil {
		f.keyTok = nil
	} else {
		f.taskTok = nil
	}
	g.tokens.remove(r)
}

// evictFor sends the last job g admitted back to g's park when g's first
// parked job sorts before it, and reports whether it did: fill then
// admits the parked one in its place.
func (s *store) evictFor(g *gate, now time.Time) bool {
	w, h := g.tokens.peek(), g.parked.peek()
	if w == nil {
		return false
	}
	if a, b := claimEnt(h), claimEnt(w); !a.less(&b) {
		return false
	}
	f := w.fl
	if p := f.park; p != nil { // a key gate's job parked by its task gate
		p.parked.remove(w)
		f.park = nil
	} else {
		w.q.ready.remove(w)
	}
	if tg := f.taskTok; tg != nil && tg != g {
		s.revoke(tg, w)
		s.fill(tg, now)
	}
	s.revoke(g, w)
	f.park = g
	g.parked.push(claimEnt(w))
	return true
}

// waitRate puts g in its queue's list of gates to fill when the second
// after now begins, and arms the queue's wake-up for it.
func (s *store) waitRate(g *gate, now time.Time) {
	sec := now.Unix() + 1
	if g.waitSec == sec {
		return
	}
	g.waitSec = sec
	q := g.q
	if len(q.rateWaits) == 0 || sec < q.nextWait {
		q.nextWait = sec
	}
	q.rateWaits = append(q.rateWaits, g)
	if s.scheduled != nil {
		s.scheduled(q.name, q, time.Unix(sec, 0).UTC())
	}
}

// wakeRates fills the gates of q whose start-rate window has passed, and
// reports whether any had some waiting.
func (s *store) wakeRates(q *queueState, now time.Time) bool {
	sec := now.Unix()
	if len(q.rateWaits) == 0 || sec < q.nextWait {
		return false
	}
	waits := q.rateWaits
	q.rateWaits = nil
	for i, g := range waits {
		waits[i] = nil
		switch {
		case g.waitSec == 0:
		case g.waitSec <= sec:
			g.waitSec = 0
			s.fill(g, now)
		default:
			if len(q.rateWaits) == 0 || g.waitSec < q.nextWait {
				q.nextWait = g.waitSec
			}
			q.rateWaits = append(q.rateWaits, g)
		}
	}
	return true
}

// nextRateWake returns the instant at which q next has gates to fill.
func (q *queueState) nextRateWake() (time.Time, bool) {
	if len(q.rateWaits) == 0 {
		return time.Time{}, false
	}
	return time.Unix(q.nextWait, 0).UTC(), true
}

// keyGate returns the gate of r's queue and limit key, making it on first
// use.
func (s *store) keyGate(r *jobRec) *gate {
	k := r.fl.key
	q := r.q
	if g := q.keyGates[k]; g != nil {
		return g
	}
	if q.keyGates == nil {
		q.keyGates = map[*keyState]*gate{}
	}
	g := &gate{q: q, t: r.t, key: k, parked: recHeap{slot: flowPark}, tokens: recHeap{slot: flowTokKey, max: true}}
	q.keyGates[k] = g
	k.gates = append(k.gates, g)
	return g
}

// taskGate returns the gate of r's queue and task, making it on first use.
func (s *store) taskGate(r *jobRec) *gate {
	t := r.t
	q := r.q
	if g := q.taskGates[t]; g != nil {
		return g
	}
	if q.taskGates == nil {
		q.taskGates = map[*taskState]*gate{}
	}
	g := &gate{q: q, t: t, parked: recHeap{slot: flowPark}, tokens: recHeap{slot: flowTokTask, max: true}}
	q.taskGates[t] = g
	t.gates = append(t.gates, g)
	return g
}

// dropGate forgets g once it holds nothing back and counts no token.
func (s *store) dropGate(g *gate, now time.Time) {
	if g.parked.len() > 0 || g.tokens.len() > 0 {
		return
	}
	g.waitSec = 0
	if g.key != nil {
		if g.q.keyGates[g.key] == g {
			delete(g.q.keyGates, g.key)
		}
		g.key.gates = without(g.key.gates, g)
		g.t.release(g.key, now)
		return
	}
	if g.q.taskGates[g.t] == g {
		delete(g.q.taskGates, g.t)
	}
	g.t.gates = without(g.t.gates, g)
}

func without(gs []*gate, g *gate) []*gate {
	for i, x := range gs {
		if x == g {
			last := len(gs) - 1
			gs[i] = gs[last]
			gs[last] = nil
			return gs[:last]
		}
	}
	return gs
}

// dropTokens gives back the tokens r holds from stage on (stageKey: both,
// stageTask: the task gate's only), and lets those gates admit again when
// refill is set. A claim drops them without refilling: the job takes the
// slot its token stood for.
func (s *store) dropTokens(r *jobRec, from int, refill bool, now time.Time) {
	f := r.fl
	if f == nil {
		return
	}
	if g := f.keyTok; g != nil && from <= stageKey {
		s.revoke(g, r)
		if refill {
			s.fill(g, now)
		}
		s.dropGate(g, now)
	}
	if g := f.taskTok; g != nil {
		s.revoke(g, r)
		if refill {
			s.fill(g, now)
		}
		s.dropGate(g, now)
	}
}

// unroute takes r off its claim path before a transition: out of the
// gate that parks it, no longer waiting for its sequence, its tokens
// given back. detach calls it after taking r out of the ready index.
func (s *store) unroute(r *jobRec, now time.Time) {
	f := r.fl
	if g := f.park; g != nil {
		g.parked.remove(r)
		f.park = nil
		s.dropGate(g, now)
	}
	f.waiting = false
	s.dropTokens(r, stageKey, true, now)
}

// claimable checks the flow rules for r, a job just taken from the ready
// index, against the counters as they are now (with the jobs claimed
// before it in this claim). When a rule holds it back it goes back where
// it waits (its sequence or a gate), gives back its tokens, and claimable
// returns false. A gate whose parked jobs sort before r takes r's place:
// r is parked and the first of them admitted.
func (s *store) claimable(r *jobRec, now time.Time) bool {
	f := r.fl
	lim := &r.t.flow
	if f != nil {
		if f.sq != nil && !f.sq.admits(r) {
			s.dropTokens(r, stageKey, true, now)
			f.waiting = true
			return false
		}
		if f.key != nil && lim.keyGated() && !hasRoom(r.q.keyGates[f.key], r.t, f.key, r, now) {
			// Tokens first: giving them back may drop the gate.
			s.dropTokens(r, stageKey, true, now)
			s.park(s.keyGate(r), r, now)
			return false
		}
	}
	if lim.taskGated() && !hasRoom(r.q.taskGates[r.t], r.t, nil, r, now) {
		s.dropTokens(r, stageTask, true, now)
		s.park(s.taskGate(r), r, now)
		return false
	}
	return true
}

// hasRoom reports whether the limits of t (of its key k, when not nil)
// let r start now, and no job that g, their gate in r's queue (nil when
// there is none), parks comes before r in claim order.
func hasRoom(g *gate, t *taskState, k *keyState, r *jobRec, now time.Time) bool {
	lim := &t.flow
	limit, rate := lim.maxRunning, lim.rate
	running, starts := t.counts.get(core.StateRunning), &t.starts
	if k != nil {
		limit, rate = lim.perKey, lim.rateKey
		running, starts = k.running, &k.starts
	}
	if limit > 0 && running >= int64(limit) || rate > 0 && starts.count(now) >= rate {
		return false
	}
	if g != nil {
		if h := g.parked.peek(); h != nil {
			a, b := claimEnt(h), claimEnt(r)
			if a.less(&b) {
				return false
			}
		}
	}
	return true
}

// reflow applies a changed config of t: every job that a gate of t
// holds back or admitted leaves its claim path and takes it again from
// the start under the new limits, so that the gates hold exactly the jobs
// the new limits hold back. Jobs in the ready index without a token stay
// there (a claim checks them against the limits as they are then), and
// jobs waiting for their sequence stay where they are (limits do not move
// a sequence). It reads the gates of t and the keys of t, never the
// retained jobs of t.
func (s *store) reflow(t *taskState, now time.Time) {
	gates := slices.Clone(t.gates)
	for _, k := range t.keys {
		gates = append(gates, k.gates...)
	}
	seen := map[*jobRec]bool{}
	var due []*jobRec
	for _, g := range gates {
		for _, h := range [2]*recHeap{&g.parked, &g.tokens} {
			for i := range h.e {
				if r := h.e[i].r; !seen[r] {
					seen[r] = true
					due = append(due, r)
				}
			}
		}
	}
	// In store order (the ids' order), as the jobs were offered first.
	slices.SortFunc(due, func(a, b *jobRec) int { return cmp.Compare(a.seq, b.seq) })
	for _, r := range due {
		r.q.ready.remove(r)
		f := r.fl
		if g := f.park; g != nil {
			g.parked.remove(r)
			f.park = nil
		}
		s.dropTokens(r, stageKey, false, now)
	}
	for _, g := range gates {
		s.dropGate(g, now)
	}
	for _, r := range due {
		s.offer(r, now)
	}
}
