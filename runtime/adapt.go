package boson

import "time"

// Tuning of adaptive slots (see [WorkerOptions.Concurrency]).
const (
	// adaptTick is the shortest window the slots are judged over.
	adaptTick = 25 * time.Millisecond
	// adaptLong is how long a handler runs before it stops holding a
	// slot (see [Worker.free]).
	adaptLong = time.Second
	// adaptShortBucket is the last [ExecutionBuckets] index of a short
	// handler: 100 ms.
	adaptShortBucket = 4
	// adaptGain is how much a growth must raise the rate of finished
	// handlers to be kept.
	adaptGain = 1.1
	// adaptHold is how many windows the slots stay put after a growth
	// was undone.
	adaptHold = 10
)

// adapter sizes a worker's slots. It is owned by the claim loop's
// goroutine, which counts its claims and calls adjust after each one.
type adapter struct {
	w        *Worker
	min, max int

	// The current window.
	start        time.Time
	claims, full int

	// Totals at the window's start.
	short, total int64

	// After a growth: the slots and the rate before it.
	probing    bool
	from       int
	rateBefore float64
	hold       int
}

func newAdapter(w *Worker, start, ceiling int) *adapter {
	a := &adapter{w: w, min: start, max: ceiling, start: time.Now()}
	a.short, a.total = w.finishedExecutions()
	return a
}

// claimed counts one claim that asked for asked jobs and got got.
func (a *adapter) claimed(asked, got int) {
	a.claims++
	if got >= asked {
		a.full++
	}
}

// adjust closes the window once it is adaptTick long and resizes the
// slots from what it saw:
//   - most finished handlers slow: halve the slots, towards the start;
//   - the last growth did not raise the rate of finished handlers (the
//     CPU, the store or the handlers' own resources are the bound, not
//     the slots): undo it and hold the size for a while;
//   - claims came back full (more work is due than slots are free) and
//     the handlers are short: double the slots, up to the ceiling.
func (a *adapter) adjust(now time.Time) {
	elapsed := now.Sub(a.start)
	if elapsed < adaptTick {
		return
	}
	short, total := a.w.finishedExecutions()
	finished, shortDone := total-a.total, short-a.short
	rate := float64(finished) / elapsed.Seconds()
	claims, full := a.claims, a.full
	a.start, a.claims, a.full, a.short, a.total = now, 0, 0, short, total
	if a.hold > 0 {
		a.hold--
	}
	cur := a.w.slots()
	probing := a.probing
	a.probing = false
	switch {
	case finished > 0 && 2*shortDone < finished:
		a.w.setSlots(max(a.min, cur/2))
	case probing && rate < a.rateBefore*adaptGain:
		a.w.setSlots(a.from)
		a.hold = adaptHold
	case a.hold == 0 && cur < a.max && claims > 0 && 4*full >= 3*claims && finished > 0:
		a.probing, a.from, a.rateBefore = true, cur, rate
		a.w.setSlots(min(a.max, 2*cur))
	}
}

// finishedExecutions returns how many handlers have returned, in all and
// within 100 ms.
func (w *Worker) finishedExecutions() (short, total int64) {
	for _, q := range w.queues {
		c := w.counters[q.name]
		for i := range c.hist {
			n := c.hist[i].Load()
			total += n
			if i <= adaptShortBucket {
				short += n
			}
		}
	}
	return short, total
}
