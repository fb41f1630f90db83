package mem

import (
	"time"
)

// Wake-ups for scheduled jobs.
//
// A job filed with a RunAt ahead (a scheduled enqueue, a retry with backoff,
// a sleep) becomes claimable when the clock reaches RunAt, and nothing
// happens in the backend at that moment. When the backend runs on the
// process clock it arms one timer per queue for the earliest scheduled job;
// when it fires, the queue's due jobs move to the ready heap and the
// queue's subscribers are signalled, so that a worker waiting on
// Subscribe does not have to poll to find them. Another clock (a
// core.ManualClock in tests) moves without timers, so then no timer is
// armed and workers find due jobs by polling, as core.Notifier allows.

// wakeTimer is the timer of one queue. gen tells a current firing from a
// stale one whose timer was replaced while its callback waited for the lock.
type wakeTimer struct {
	timer *time.Timer
	at    time.Time
	gen   uint64
}

// stop cancels the pending firing, if any.
func (w *wakeTimer) stop() {
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	w.gen++
}

// armWake makes sure queue's timer fires no later than at. Called with the
// lock held whenever a job enters the queue's scheduled heap.
func (b *Backend) armWake(queue string, q *queueState, at time.Time) {
	w := &q.wake
	if w.timer != nil && !at.Before(w.at) {
		return // an earlier or equal firing is already pending
	}
	w.stop()
	gen := w.gen
	w.at = at
	w.timer = time.AfterFunc(time.Until(at), func() { b.wake(queue, gen) })
}

// wake is a timer's callback: it moves the queue's due jobs to the ready
// heap, lets the gates whose start-rate window passed admit their jobs,
// signals the queue if any moved, and arms the timer for the next
// scheduled job or rate window.
func (b *Backend) wake(queue string, gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	q := b.s.queues[queue]
	if q == nil || q.wake.gen != gen {
		return // replaced by a newer timer
	}
	q.wake.timer = nil
	now := b.now()
	s := b.s
	s.holdSignals()
	moved := false
	if r := q.scheduled.peek(); r != nil && !r.job.RunAt.After(now) {
		s.promoteDue(q, now)
		moved = true
	}
	if s.wakeRates(q, now) {
		moved = true
	}
	if moved {
		s.notify(queue)
	}
	s.releaseSignals()
	if r := q.scheduled.peek(); r != nil {
		b.armWake(queue, q, r.job.RunAt)
	}
	if at, ok := q.nextRateWake(); ok {
		b.armWake(queue, q, at)
	}
}
