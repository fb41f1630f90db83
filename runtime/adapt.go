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
	// adaptGrow is the factor of one growth: from the 10 slots a worker
	// starts with, four growths reach the default ceiling, so that a
	// burst of short jobs is drained at full speed within about a
	// tenth of a second.
	adaptGrow = 4
	// adaptHoldFirst is how many windows the slots stay put after the
	// first growth that was undone; each further undone growth doubles
	// the hold, up to adaptHold, and a kept growth resets it. One noisy
	// window then costs little, while a worker at its bound probes
	// rarely.
	adaptHoldFirst = 2
	// adaptHold is the longest hold, in windows.
	adaptHold = 16
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

	// After a growth: the slots and the rate before it. settling is set
	// until the first claim after the growth, which starts the window
	// the growth is judged over: the window that was open when the slots
	// grew saw none of the jobs they let in.
	probing    bool
	settling   bool
	from       int
	rateBefore float64
	hold       int
	// nextHold is the hold after the next undone growth.
	nextHold int
}

func newAdapter(w *Worker, start, ceiling int) *adapter {
	a := &adapter{w: w, min: start, max: ceiling, start: time.Now(), nextHold: adaptHoldFirst}
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
//     the slots): undo it and hold the size for a while, longer after
//     each growth undone in a row;
//   - claims came back full (more work is due than slots are free) and
//     the handlers are short: grow the slots adaptGrow times, up to the
//     ceiling, or twice when the last growth was undone (the bound is
//     near).
//
// After a growth, the first claim restarts the window without judging
// it, so that the growth is judged over a window in which its slots ran.
func (a *adapter) adjust(now time.Time) {
	if a.settling {
		if a.claims == 0 {
			return
		}
		a.settling = false
		a.restart(now)
		return
	}
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
		a.hold = a.nextHold
		a.nextHold = min(adaptHold, 2*a.nextHold)
	case a.hold == 0 && cur < a.max && claims > 0 && 4*full >= 3*claims && finished > 0:
		if probing {
			a.nextHold = adaptHoldFirst // the last growth was kept
		}
		grow := adaptGrow
		if a.nextHold > adaptHoldFirst {
			grow = 2 // the last growth was undone: the bound is near, step finer
		}
		a.probing, a.settling, a.from, a.rateBefore = true, true, cur, rate
		a.w.setSlots(min(a.max, grow*cur))
	default:
		if probing {
			a.nextHold = adaptHoldFirst
		}
	}
}

// restart opens a new window at now.
func (a *adapter) restart(now time.Time) {
	a.start, a.claims, a.full = now, 0, 0
	a.short, a.total = a.w.finishedExecutions()
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
