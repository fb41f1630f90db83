package mem

import (
	"fmt"
	"time"

	"github.com/boson-go/boson/core"
)

// CheckFlow verifies the flow bookkeeping of b against its jobs: every
// due queued or sleeping job sits in exactly one place of its claim path
// (ready index, a gate's park heap, waiting for its sequence), every gate
// counts the tokens its jobs hold and admits as many as its slots allow,
// and the running counts of the keys match the running jobs.
func CheckFlow(b *Backend) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.s
	now := b.now()
	tokens := map[*gate]int{}
	running := map[*keyState]int64{}
	for i := range s.ids.len() {
		r := s.ids.rec(i)
		if r.deleted {
			continue
		}
		if r.jobBody == nil {
			if f := r.fl; f != nil && (f.park != nil || f.keyTok != nil || f.taskTok != nil || f.waiting) {
				return fmt.Errorf("finished job %s is still on a claim path: %+v", r.id, *f)
			}
			continue
		}
		j := &r.job
		f := r.fl
		if f != nil {
			if g := f.park; g != nil && (g.key != nil && g.q.keyGates[g.key] != g || g.key == nil && g.q.taskGates[g.t] != g) {
				return fmt.Errorf("job %s is parked in a gate its queue no longer has", r.id)
			}
			if f.keyTok != nil {
				tokens[f.keyTok]++
			}
			if f.taskTok != nil {
				tokens[f.taskTok]++
			}
			if f.key != nil && j.State == core.StateRunning {
				running[f.key]++
			}
		}
		inReady := r.fifo >= 0 || r.pos[slotReady] >= 0
		inSched := r.pos[slotSched] >= 0
		places := 0
		for _, in := range []bool{inReady, inSched, f != nil && f.park != nil, f != nil && f.waiting} {
			if in {
				places++
			}
		}
		switch j.State {
		case core.StateQueued, core.StateSleeping:
			if places != 1 {
				return fmt.Errorf("job %s (%s) is in %d places (ready %v sched %v flow %+v)", r.id, j.State, places, inReady, inSched, f)
			}
			if !inReady && f != nil && (f.keyTok != nil && f.park == nil || f.taskTok != nil) {
				return fmt.Errorf("job %s holds tokens outside the ready index: %+v", r.id, *f)
			}
		default:
			if places != 0 || f != nil && (f.keyTok != nil || f.taskTok != nil) {
				return fmt.Errorf("job %s (%s) is on a claim path: ready %v sched %v flow %+v", r.id, j.State, inReady, inSched, f)
			}
		}
	}
	for _, t := range s.tasks {
		for _, k := range t.keys {
			if k.running != running[k] {
				return fmt.Errorf("key %s counts %d running, has %d", k.name, k.running, running[k])
			}
			for _, g := range k.gates {
				if err := checkGate(g, tokens[g], now); err != nil {
					return err
				}
			}
		}
		for _, g := range t.gates {
			if err := checkGate(g, tokens[g], now); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkGate(g *gate, tokens int, now time.Time) error {
	if g.key != nil && g.q.keyGates[g.key] != g || g.key == nil && g.q.taskGates[g.t] != g {
		return fmt.Errorf("gate %p is not the gate of its queue", g)
	}
	for _, e := range g.parked.e {
		if e.r.fl.park != g {
			return fmt.Errorf("gate %p parks job %s, which names gate %p", g, e.r.id, e.r.fl.park)
		}
	}
	if g.tokens.len() != tokens {
		return fmt.Errorf("gate %p counts %d tokens, its jobs hold %d", g, g.tokens.len(), tokens)
	}
	if g.parked.len() > 0 && (g.waitSec == 0 || g.waitSec > now.Unix()) {
		c, byRate := g.room(now)
		if g.tokens.len() < c {
			return fmt.Errorf("gate %p parks %d jobs with %d of %d slots taken", g, g.parked.len(), g.tokens.len(), c)
		}
		if byRate && g.waitSec == 0 {
			return fmt.Errorf("gate %p waits for a rate window but is not listed", g)
		}
	}
	return nil
}

// DebugJob describes where job id sits on its claim path.
func DebugJob(b *Backend, id string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.s.ids.find(id)
	if r == nil {
		return "no such job"
	}
	out := fmt.Sprintf("fifo %d pos %v", r.fifo, r.pos)
	if f := r.fl; f != nil {
		out += fmt.Sprintf(" park %p keyTok %p taskTok %p waiting %v holding %v", f.park, f.keyTok, f.taskTok, f.waiting, f.holding)
		if g := f.park; g != nil {
			out += fmt.Sprintf(" gate: parked %d tokens %d", g.parked.len(), g.tokens.len())
			for _, e := range g.tokens.e {
				out += " tok:" + e.r.id
			}
			c, byRate := g.room(b.now())
			out += fmt.Sprintf(" room %d %v waitSec %d", c, byRate, g.waitSec)
		}
	}
	return out
}
