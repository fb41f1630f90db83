package boson

import (
	"context"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
)

// watchPause is the shortest time between two passes of the cancellation
// watcher: it bounds the extra reads to one per running attempt per pause.
const watchPause = time.Second

// watcher notices, without waiting for the next heartbeat, that a running
// job was cancelled (or otherwise left its lease): when a backend that
// notifies signals a served queue, it reads the state of that queue's
// running attempts, at most once per watchPause.
type watcher struct {
	mu      sync.Mutex
	running map[string]map[*attempt]struct{} // by queue
	pending map[string]bool                  // queues signalled since the last pass
	kick    chan struct{}
}

func newWatcher() *watcher {
	return &watcher{running: map[string]map[*attempt]struct{}{}, pending: map[string]bool{}, kick: make(chan struct{}, 1)}
}

func (wt *watcher) add(a *attempt) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	m := wt.running[a.job.Queue]
	if m == nil {
		m = map[*attempt]struct{}{}
		wt.running[a.job.Queue] = m
	}
	m[a] = struct{}{}
}

func (wt *watcher) remove(a *attempt) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	delete(wt.running[a.job.Queue], a)
}

// signal records that queue changed.
func (wt *watcher) signal(queue string) {
	wt.mu.Lock()
	if len(wt.running[queue]) == 0 {
		wt.mu.Unlock()
		return
	}
	wt.pending[queue] = true
	wt.mu.Unlock()
	select {
	case wt.kick <- struct{}{}:
	default:
	}
}

// loop runs passes until stop closes.
func (wt *watcher) loop(ctx context.Context, stop <-chan struct{}) {
	pause := time.NewTimer(0)
	defer pause.Stop()
	for {
		select {
		case <-stop:
			return
		case <-wt.kick:
		}
		wt.pass(ctx)
		pause.Reset(watchPause)
		select {
		case <-stop:
			return
		case <-pause.C:
		}
	}
}

// pass checks the running attempts of the signalled queues.
func (wt *watcher) pass(ctx context.Context) {
	wt.mu.Lock()
	var check []*attempt
	for q := range wt.pending {
		for a := range wt.running[q] {
			check = append(check, a)
		}
	}
	clear(wt.pending)
	wt.mu.Unlock()
	for _, a := range check {
		if a.lost.Load() {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		j, err := a.b.GetJob(rctx, a.job.ID)
		cancel()
		if err != nil {
			continue // the heartbeat decides
		}
		if j.State != core.StateRunning || j.Lease.Token != a.job.Lease.Token {
			a.markLost()
		}
	}
}
