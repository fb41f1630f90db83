package engine

import (
	"sync"
	"time"
)

// hub fans wake-up signals out to the local subscriptions of each queue,
// and ticks every subscription at the poll interval so that a missed
// notification costs at most one interval.
type hub struct {
	mu     sync.Mutex
	subs   map[string]map[chan struct{}]struct{}
	stop   chan struct{}
	closed bool
}

func newHub(poll time.Duration) *hub {
	h := &hub{subs: map[string]map[chan struct{}]struct{}{}, stop: make(chan struct{})}
	if poll > 0 {
		go h.tick(poll)
	}
	return h
}

func (h *hub) tick(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			h.signalAll()
		}
	}
}

func (h *hub) subscribe(queue string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ch, func() {}
	}
	set := h.subs[queue]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		h.subs[queue] = set
	}
	set[ch] = struct{}{}
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if s := h.subs[queue]; s != nil {
				delete(s, ch)
				if len(s) == 0 {
					delete(h.subs, queue)
				}
			}
		})
	}
}

func (h *hub) signal(queue string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[queue] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (h *hub) signalAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, set := range h.subs {
		for ch := range set {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.stop)
	}
}
