package redisq

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// hub holds the pub/sub subscriptions of a Backend: one connection per
// subscribed queue, shared by every local subscriber of that queue. Scripts
// PUBLISH on a queue's channel when a job becomes claimable now or
// finishes; the hub fans each message out to the local subscribers.
type hub struct {
	b *Backend

	mu     sync.Mutex
	chans  map[string]*channelSubs
	closed bool
	done   chan struct{}
}

type channelSubs struct {
	ps   *redis.PubSub
	subs map[*subscription]struct{}
}

type subscription struct {
	ch   chan struct{}
	stop chan struct{}
}

func newHub(b *Backend) *hub {
	return &hub{b: b, chans: map[string]*channelSubs{}, done: make(chan struct{})}
}

func (s *subscription) signal() {
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

// subscribeWait bounds how long Subscribe waits for Redis to confirm a new
// subscription; past it the subscription still works once Redis answers,
// and the periodic signal covers the gap.
const subscribeWait = 5 * time.Second

// Subscribe returns a channel that receives a value soon after a job of
// queue becomes claimable now or finishes, and, as a fallback for
// notifications lost while the connection was down, every
// Options.PollInterval. Signals coalesce. When Subscribe returns, the
// subscription is active on the server (if Redis answered within a few
// seconds), so a change made after it returns is signalled. stop must be
// called once. After Close the channel receives nothing.
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
	cs := h.chans[channel]
	if cs == nil {
		cs = &channelSubs{subs: map[*subscription]struct{}{}}
		h.chans[channel] = cs
		cs.ps = h.listen(channel)
	}
	cs.subs[s] = struct{}{}
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
			delete(cs.subs, s)
			if len(cs.subs) == 0 && h.chans[channel] == cs {
				delete(h.chans, channel)
				_ = cs.ps.Close()
			}
		})
	}
}

// listen opens a pub/sub connection on channel, waits for the server to
// confirm it and starts its reader. h.mu is held.
func (h *hub) listen(channel string) *redis.PubSub {
	ctx, cancel := context.WithTimeout(context.Background(), subscribeWait)
	defer cancel()
	ps := h.b.rdb.Subscribe(ctx, channel)
	if _, err := ps.Receive(ctx); err != nil {
		h.b.opts.Logger.Warn("redisq: subscribe", "channel", channel, "err", err)
	}
	msgs := ps.Channel()
	go func() {
		for range msgs {
			h.mu.Lock()
			if cs := h.chans[channel]; cs != nil && cs.ps == ps {
				for s := range cs.subs {
					s.signal()
				}
			}
			h.mu.Unlock()
		}
	}()
	return ps
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	close(h.done)
	for ch, cs := range h.chans {
		_ = cs.ps.Close()
		delete(h.chans, ch)
	}
}
