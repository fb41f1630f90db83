package boson

import (
	"context"
	"fmt"
	"sync"

	"github.com/boson-go/boson/core"
)

// completer writes completions that finish together in one backend call
// per backend.
type completer struct {
	max  int
	in   chan completionReq
	done chan struct{}
	once sync.Once
}

type completionReq struct {
	b    core.QueueBackend
	item core.Completion
	resp chan error
}

func newCompleter(max int) *completer {
	return &completer{max: max, in: make(chan completionReq, max), done: make(chan struct{})}
}

// complete writes one completion and returns its outcome.
func (c *completer) complete(b core.QueueBackend, item core.Completion) error {
	req := completionReq{b: b, item: item, resp: make(chan error, 1)}
	select {
	case c.in <- req:
	case <-c.done:
		return fmt.Errorf("%w: worker stopped", core.ErrClosed)
	}
	return <-req.resp
}

// close stops the loop once every attempt has finished.
func (c *completer) close() { c.once.Do(func() { close(c.done) }) }

func (c *completer) loop() {
	for {
		var first completionReq
		select {
		case first = <-c.in:
		case <-c.done:
			// Attempts have all finished before close; drain stragglers.
			for {
				select {
				case r := <-c.in:
					c.flush([]completionReq{r})
				default:
					return
				}
			}
		}
		batch := []completionReq{first}
	gather:
		for len(batch) < c.max {
			select {
			case r := <-c.in:
				batch = append(batch, r)
			default:
				break gather
			}
		}
		c.flush(batch)
	}
}

// flush writes a batch, grouped by backend, and answers every request.
func (c *completer) flush(batch []completionReq) {
	for len(batch) > 0 {
		b := batch[0].b
		var group, rest []completionReq
		for _, r := range batch {
			if r.b == b {
				group = append(group, r)
			} else {
				rest = append(rest, r)
			}
		}
		items := make([]core.Completion, len(group))
		for i, r := range group {
			items[i] = r.item
		}
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		errs, err := b.Complete(ctx, items)
		cancel()
		for i, r := range group {
			switch {
			case err != nil:
				r.resp <- err
			case i < len(errs):
				r.resp <- errs[i]
			default:
				r.resp <- nil
			}
		}
		batch = rest
	}
}
