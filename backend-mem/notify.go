package mem

// subscription is one Subscribe call: a channel that holds at most one
// pending signal.
type subscription struct {
	ch chan struct{}
}

// subscribers maps a queue to its live subscriptions. It is guarded by the
// Backend's mutex.
type subscribers map[string]map[*subscription]struct{}

// signal wakes every subscriber of queue without blocking: a subscriber that
// already has a signal pending keeps just that one.
func (subs subscribers) signal(queue string) {
	for sub := range subs[queue] {
		select {
		case sub.ch <- struct{}{}:
		default:
		}
	}
}

// Subscribe returns a channel that receives a value soon after a job of
// queue is enqueued, becomes due again through a failed attempt's retry, a
// rescue, a manual retry or a sleep, or finishes, and when the queue is
// resumed. Signals coalesce (the channel holds at most one) and may be
// spurious. On the process clock a job whose RunAt lies ahead signals
// again when it comes due (see wake.go); on any other clock it does not,
// and workers find it by polling. stop releases the subscription; calling
// it more than once is harmless. After Close the channel never receives.
func (b *Backend) Subscribe(queue string) (signal <-chan struct{}, stop func()) {
	sub := &subscription{ch: make(chan struct{}, 1)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return sub.ch, func() {}
	}
	if b.subs[queue] == nil {
		b.subs[queue] = map[*subscription]struct{}{}
	}
	b.subs[queue][sub] = struct{}{}
	return sub.ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.subs[queue], sub)
		if len(b.subs[queue]) == 0 {
			delete(b.subs, queue)
		}
	}
}
