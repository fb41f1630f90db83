package redisq

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// hub shares one pub/sub connection among the subscriptions of a Backend.
// Scripts PUBLISH on a queue's channel when a job becomes claimable now or
// finishes; the hub fans each message out to the local subscribers.
type hub struct {
	b *Backend

	mu     sync.Mutex
	ps     *redis.PubSub
	subs   map[string]map[*subscription]struct{} // channel -> subscribers
	closed bool
	done   chan struct{}
}

type subscription struct {
	ch   chan struct{}
	stop chan struct{}
}

func newHub(b *Backend) *hub {
	return &hub{b: b, subs: map[string]map[*subscription]struct{}{}, done: make(chan struct{})}
}

func (s *subscription) signal() {
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

// Subscribe returns a channel that receives a value soon after a job of
// queue becomes claimable now or finishes, and, as a fallback for
// notifications lost while the connection was down, every
// Options.PollInterval. Signals coalesce. stop must be called once.
// Subscribing does not validate queue: a queue that never gets jobs simply
// never signals. After Close the channel only receives nothing.
func (b *Backend) Subscribe(queue string) (<-chan struct{}, func()) {
	return b.hub.subscribe(b.ks.channel(queue))
}

func (h *hub) subscribe(channel string) (<-chan struct{}, func()) {
	s := &subscription{ch: make(chan struct{}, 1), stop: make(chan struct{})}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return s.ch, func() {}
	}
	set := h.subs[channel]
	if set == nil {
		set = map[*subscription]struct{}{}
		h.subs[channel] = set
		h.listen(channel)
	}
	set[s] = struct{}{}
	h.mu.Unlock()

	if d := h.b.opts.PollInterval; d > 0 {
		go func() {
			t := time.NewTicker(d)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					s.signal()
				case <-s.stop:
					return
				case <-h.done:
					return
				}
			}
		}()
	}
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			close(s.stop)
			h.mu.Lock()
			defer h.mu.Unlock()
			set := h.subs[channel]
			delete(set, s)
			if len(set) == 0 {
				delete(h.subs, channel)
				if h.ps != nil && !h.closed {
					_ = h.ps.Unsubscribe(context.Background(), channel)
				}
			}
		})
	}
}

// listen subscribes the shared connection to channel, starting the
// connection and its reader on first use. h.mu is held.
func (h *hub) listen(channel string) {
	ctx := context.Background()
	if h.ps != nil {
		if err := h.ps.Subscribe(ctx, channel); err != nil {
			h.b.opts.Logger.Warn("redisq: subscribe", "channel", channel, "err", err)
		}
		return
	}
	h.ps = h.b.rdb.Subscribe(ctx, channel)
	msgs := h.ps.Channel()
	go func() {
		for m := range msgs {
			h.mu.Lock()
			for s := range h.subs[m.Channel] {
				s.signal()
			}
			h.mu.Unlock()
		}
	}()
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	close(h.done)
	if h.ps != nil {
		_ = h.ps.Close()
	}
}
