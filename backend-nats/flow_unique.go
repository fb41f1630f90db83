package natsq

import (
	"fmt"
	"time"

	"github.com/boson-go/boson/core"
)

// Unique modes. s.idem maps each (queue, key) to the newest job that took
// the key: an enqueue whose key no job holds (core.HoldsKey at the
// command's time) creates a job, which takes the entry, and Retry of a
// job of mode while-active takes it back. At most one job holds a key, and
// when one does it is the entry: a job that stopped holding its key never
// holds it again except by such a Retry, which moves the entry. Several
// jobs may so carry the same key; removing a job frees the entry only when
// it is that job's.

// holder returns the job that holds key of queue at now, or nil.
func (s *state) holder(queue, key string, now time.Time) *jobRec {
	r := s.idem[idemKey{queue, key}]
	if r == nil || !core.HoldsKey(r.job, now) {
		return nil
	}
	return r
}

// retakeKey lets a retried job of mode while-active hold its key again: it
// fails with an error wrapping ErrIdempotencyConflict, changing nothing,
// when another job holds the key at now. Jobs of the other modes keep or
// lose their key by time and retention alone.
func (s *state) retakeKey(r *jobRec, now time.Time) error {
	j := &r.job
	if j.IdempotencyKey == "" || j.Unique != core.UniqueWhileActive {
		return nil
	}
	if h := s.holder(j.Queue, j.IdempotencyKey, now); h != nil && h != r {
		return fmt.Errorf("%w: key %q is held by job %s; job %s cannot take it back", core.ErrIdempotencyConflict, j.IdempotencyKey, h.job.ID, j.ID)
	}
	s.idem[idemKey{j.Queue, j.IdempotencyKey}] = r
	return nil
}
