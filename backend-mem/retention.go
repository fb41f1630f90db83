package mem

import (
	"context"

	"github.com/boson-go/boson/core"
)

// Cleanup deletes at most req.Limit terminal jobs that finished strictly
// before req.FinishedBefore (of req.Queue only, when set), oldest finished
// first, with their runs and checkpoints, and releases their idempotency
// keys. It returns how many jobs it deleted. It pops the heap of terminal
// jobs by finish time (the queue's own heap when a queue is named):
// O(k log n) for k deletions.
func (b *Backend) Cleanup(ctx context.Context, req core.CleanupRequest) (int, error) {
	if err := b.usable(ctx); err != nil {
		return 0, err
	}
	if err := core.ValidateCleanup(req, b.limits); err != nil {
		return 0, err
	}
	if err := b.lock(ctx); err != nil {
		return 0, err
	}
	defer b.mu.Unlock()
	s := b.s
	now := b.now()

	h := &s.finished
	if req.Queue != "" {
		q, ok := s.queues[req.Queue]
		if !ok {
			return 0, nil
		}
		h = &q.finished
	}
	n := 0
	for n < req.Limit {
		r, at := h.peekTime()
		if r == nil || !at.Before(req.FinishedBefore) {
			break
		}
		s.delete(r, now) // also removes r from h
		n++
	}
	return n, nil
}
