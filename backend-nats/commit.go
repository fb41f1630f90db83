package natsq

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/boson-go/boson/core"
)

// Group commit. One goroutine per Backend publishes commands: while one
// message is on its way to the server, the commands that other goroutines
// submit meanwhile queue up and then go out together, as one opGroup
// message. Concurrent callers thus share round trips, and the log holds
// fewer, larger messages. Order is kept: a command submitted after another
// returned is published after it.

const maxGroup = 256

// submission is one encoded command waiting to be published.
type submission struct {
	data     []byte
	res      chan submitResult
	canceled atomic.Bool
}

type submitResult struct {
	seq uint64
	err error
}

// submit hands data to the committer and returns the stream sequence of
// the message that carried it.
func (b *Backend) submit(ctx context.Context, data []byte) (uint64, error) {
	s := &submission{data: data, res: make(chan submitResult, 1)}
	select {
	case b.submitCh <- s:
	case <-ctx.Done():
		return 0, fmt.Errorf("natsq: submit command: %w", ctx.Err())
	case <-b.closed:
		return 0, fmt.Errorf("natsq: %w", core.ErrClosed)
	}
	select {
	case r := <-s.res:
		return r.seq, r.err
	case <-ctx.Done():
		// Not published yet: the committer will skip it. Already on its
		// way: its outcome is unknown to this caller.
		s.canceled.Store(true)
		return 0, fmt.Errorf("natsq: publish command: %w", ctx.Err())
	case <-b.closed:
		s.canceled.Store(true)
		return 0, fmt.Errorf("natsq: %w", core.ErrClosed)
	}
}

// commitLoop is the committer goroutine.
func (b *Backend) commitLoop() {
	defer b.bg.Done()
	ctx, cancel := b.untilClosed(context.Background())
	defer cancel()
	var carry *submission
	var n uint64
	for {
		first := carry
		carry = nil
		if first == nil {
			select {
			case first = <-b.submitCh:
			case <-b.closed:
				return
			}
		}
		group := []*submission{first}
		size, limit := len(first.data), b.msgLimit()
	gather:
		for len(group) < maxGroup {
			select {
			case s := <-b.submitCh:
				if size+len(s.data)+1 > limit {
					carry = s
					break gather
				}
				group = append(group, s)
				size += len(s.data) + 1
			default:
				break gather
			}
		}
		live := group[:0]
		for _, s := range group {
			if !s.canceled.Load() {
				live = append(live, s)
			}
		}
		if len(live) == 0 {
			continue
		}
		data := live[0].data
		if len(live) > 1 {
			raw := make([]json.RawMessage, len(live))
			for i, s := range live {
				raw[i] = s.data
			}
			var err error
			data, err = json.Marshal(command{Op: opGroup, Origin: b.origin, Group: raw})
			if err != nil {
				for _, s := range live {
					s.res <- submitResult{err: fmt.Errorf("natsq: encode command group: %w", err)}
				}
				continue
			}
		}
		n++
		seq, single, err := b.publish(ctx, b.origin+"."+strconv.FormatUint(n, 10), data)
		if err == nil && single && b.opts.DecisionClock != nil {
			// Fast path: when nothing came between this replica's position
			// and the message, apply it here instead of waiting for its
			// delivery. Only a command that carries its own time can be
			// applied before its delivery tells the server's timestamp.
			b.mu.Lock()
			if b.st.applied == seq-1 && b.broken.Load() == nil {
				var c command
				if json.Unmarshal(data, &c) == nil && !c.Now.IsZero() {
					b.applyLocked(seq, &c, b.st.lastTS)
				}
			}
			b.mu.Unlock()
		}
		for _, s := range live {
			s.res <- submitResult{seq: seq, err: err}
		}
	}
}
