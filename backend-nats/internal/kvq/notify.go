package kvq

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// notifier fans the signals of a queue's subject out to the local
// subscribers of that queue: one core NATS subscription per queue and
// process, whatever the number of subscribers.
type notifier struct {
	b    *Backend
	mu   sync.Mutex
	subs map[string]*queueSubs
}

type queueSubs struct {
	sub *nats.Subscription
	chs map[chan struct{}]struct{}
}

func newNotifier(b *Backend) *notifier {
	return &notifier{b: b, subs: map[string]*queueSubs{}}
}

// Subscribe implements core.Notifier: the channel receives a value soon
// after a job of queue is enqueued, requeued, woken or finished in any
// process, and every PollInterval (for jobs that come due by the passing
// of time). Signals coalesce and may be spurious.
func (b *Backend) Subscribe(queue string) (<-chan struct{}, func()) {
	n := b.notify
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	defer n.mu.Unlock()
	if b.isClosed() != nil {
		close(ch)
		return ch, func() {}
	}
	qs := n.subs[queue]
	if qs == nil {
		qs = &queueSubs{chs: map[chan struct{}]struct{}{}}
		sub, err := b.nc.Subscribe(b.sigSubj(queue), func(*nats.Msg) { n.signal(queue) })
		if err == nil {
			qs.sub = sub
		}
		n.subs[queue] = qs
	}
	qs.chs[ch] = struct{}{}
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			qs := n.subs[queue]
			if qs == nil {
				return
			}
			if _, ok := qs.chs[ch]; ok {
				delete(qs.chs, ch)
				close(ch)
			}
			if len(qs.chs) == 0 {
				if qs.sub != nil {
					_ = qs.sub.Unsubscribe()
				}
				delete(n.subs, queue)
			}
		})
	}
}

func (n *notifier) signal(queue string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if qs := n.subs[queue]; qs != nil {
		for ch := range qs.chs {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

func (n *notifier) closeAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for q, qs := range n.subs {
		if qs.sub != nil {
			_ = qs.sub.Unsubscribe()
		}
		for ch := range qs.chs {
			close(ch)
		}
		delete(n.subs, q)
	}
}

// poll signals every subscribed queue each PollInterval: jobs that come
// due by the passing of time announce themselves to nobody.
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
		for _, q := range queues {
			n.signal(q)
		}
	}
}
