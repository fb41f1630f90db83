package natsq

import (
	"sync"
	"time"
)

// notifier fans wake-ups out to the subscribers of each queue. Because every
// replica applies every command, a subscriber hears of enqueues and
// finished jobs from every process sharing the namespace.
type notifier struct {
	b    *Backend
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

func newNotifier(b *Backend) *notifier {
	return &notifier{b: b, subs: map[string]map[chan struct{}]struct{}{}}
}

// Subscribe implements core.Notifier: the channel receives a value soon
// after a job of queue changes in any process (enqueued, requeued, woken or
// finished), and every PollInterval while the queue holds a due job. Signals
// coalesce and may be spurious. After Close the channel is closed.
func (b *Backend) Subscribe(queue string) (<-chan struct{}, func()) {
	n := b.notify
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	select {
	case <-b.closed:
		n.mu.Unlock()
		close(ch)
		return ch, func() {}
	default:
	}
	m := n.subs[queue]
	if m == nil {
		m = map[chan struct{}]struct{}{}
		n.subs[queue] = m
	}
	m[ch] = struct{}{}
	n.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			if m := n.subs[queue]; m != nil {
				if _, ok := m[ch]; ok {
					delete(m, ch)
					close(ch)
				}
				if len(m) == 0 {
					delete(n.subs, queue)
				}
			}
		})
	}
}

func (n *notifier) signal(queue string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.subs[queue] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (n *notifier) signalAll() {
	n.mu.Lock()
	queues := make([]string, 0, len(n.subs))
	for q := range n.subs {
		queues = append(queues, q)
	}
	n.mu.Unlock()
	for _, q := range queues {
		n.signal(q)
	}
}

func (n *notifier) closeAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for q, m := range n.subs {
		for ch := range m {
			close(ch)
		}
		delete(n.subs, q)
	}
}

// poll signals, every PollInterval, the subscribed queues that hold a due
// job: those jobs became claimable by the passing of time, which no
// command announces.
func (n *notifier) poll() {
	defer n.b.bg.Done()
	t := time.NewTicker(n.b.opts.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-n.b.closed:
			return
		case <-t.C:
		}
		n.mu.Lock()
		queues := make([]string, 0, len(n.subs))
		for q := range n.subs {
			queues = append(queues, q)
		}
		n.mu.Unlock()
		now, known := n.b.estimate()
		for _, q := range queues {
			if !known || n.b.hasDue(q, now) {
				n.signal(q)
			}
		}
	}
}
