package boson

import (
	"context"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
)

// completer writes completions in as few backend calls as it can without
// delaying any of them: it writes whatever has queued up while the
// previous call ran (group commit), up to max per call and per backend.
// Writes are asynchronous: the attempt's runner hands its completion over
// and moves on to the next job, and the completer reports each outcome
// through the request's done function, on the completer's goroutine.
type completer struct {
	max  int
	in   chan completionReq
	stop chan struct{}
	once sync.Once

	// The writes' context, owned by the loop: one timer serves many
	// writes, each of which still has between writeTimeout/2 and
	// writeTimeout to finish.
	ctx      context.Context
	cancel   context.CancelFunc
	deadline time.Time
	items    []core.Completion // the last write's items, reused
}

type completionReq struct {
	b    core.QueueBackend
	item core.Completion
	done completionDone
}

// completionDone receives the outcome of one completion (an attempt, so
// that submitting one allocates no callback).
type completionDone interface {
	completed(error)
}

// newCompleter returns a completer whose queue holds up to capacity
// requests before submit blocks.
func newCompleter(limit, capacity int) *completer {
	return &completer{max: limit, in: make(chan completionReq, max(capacity, 1)), stop: make(chan struct{})}
}

// submit queues one completion; done is told its outcome exactly once. It
// must not be called after close.
func (c *completer) submit(b core.QueueBackend, item core.Completion, done completionDone) {
	c.in <- completionReq{b: b, item: item, done: done}
}

// close makes the loop write what is queued and return. Every submit must
// have returned before close is called.
func (c *completer) close() { c.once.Do(func() { close(c.stop) }) }

func (c *completer) loop() {
	defer func() {
		if c.cancel != nil {
			c.cancel()
		}
	}()
	batch := make([]completionReq, 0, c.max)
	for {
		select {
		case r := <-c.in:
			batch = append(batch[:0], r)
		case <-c.stop:
			// Every attempt has handed its completion over before close:
			// write the rest, batched like any other.
			for {
				batch = c.gather(batch[:0])
				if len(batch) == 0 {
					return
				}
				c.flush(batch)
			}
		}
		c.flush(c.gather(batch))
	}
}

// gather appends the requests already queued, up to max in all.
func (c *completer) gather(batch []completionReq) []completionReq {
	for len(batch) < c.max {
		select {
		case r := <-c.in:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// flush writes a batch, one call per backend, and reports every outcome.
func (c *completer) flush(batch []completionReq) {
	b := batch[0].b
	same := true
	for _, r := range batch[1:] {
		if r.b != b {
			same = false
			break
		}
	}
	if same {
		c.write(b, batch)
		return
	}
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
		c.write(b, group)
		batch = rest
	}
}

// writeContext returns a context that ends at least writeTimeout/2 from
// now.
func (c *completer) writeContext() context.Context {
	now := time.Now()
	if c.ctx == nil || c.deadline.Sub(now) < writeTimeout/2 {
		if c.cancel != nil {
			c.cancel()
		}
		c.deadline = now.Add(writeTimeout)
		c.ctx, c.cancel = context.WithDeadline(context.Background(), c.deadline)
	}
	return c.ctx
}

// write completes one backend's group in one call. The items slice is
// reused from call to call: Complete does not keep it.
func (c *completer) write(b core.QueueBackend, group []completionReq) {
	items := c.items[:0]
	for _, r := range group {
		items = append(items, r.item)
	}
	errs, err := b.Complete(c.writeContext(), items)
	clear(items) // drop the results for the collector
	c.items = items[:0]
	for i, r := range group {
		switch {
		case err != nil:
			r.done.completed(err)
		case i < len(errs):
			r.done.completed(errs[i])
		default:
			r.done.completed(nil)
		}
	}
}
