package mem

import (
	"context"
	"fmt"
	"time"

	"github.com/boson-go/boson/core"
)

// Enqueue stores a batch of jobs atomically: every item is stored or reused,
// or nothing is. It validates and prepares the batch with
// [core.PrepareJobs] before taking the lock, then, under the lock, resolves
// idempotency keys, checks the task limits of the new jobs, and only then
// stores them. Cost: O(k log n) for k items.
func (b *Backend) Enqueue(ctx context.Context, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	if err := b.usable(ctx); err != nil {
		return nil, err
	}
	now := b.now()
	jobs, err := core.PrepareJobs(reqs, now, b.limits)
	if err != nil {
		return nil, err
	}
	// Own copies of the caller's payloads and headers.
	for i := range jobs {
		jobs[i] = copyJob(jobs[i])
	}

	if err := b.lock(ctx); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	s := b.s

	// Pass 1: resolve idempotency keys and count the new jobs per task.
	// Nothing changes until every item has passed.
	reused := make([]*core.Job, len(jobs)) // the job an item reuses, if any
	inBatch := map[idemKey]int{}           // key -> index of its first item in this batch
	newPerTask := map[string]int{}
	for i := range jobs {
		j := &jobs[i]
		if j.IdempotencyKey != "" {
			k := idemKey{j.Queue, j.IdempotencyKey}
			var held *core.Job
			if r := s.idem[k]; r != nil {
				held = &r.job
			} else if first, ok := inBatch[k]; ok {
				held = &jobs[first]
			}
			if held != nil {
				if held.Fingerprint != j.Fingerprint {
					return nil, &core.BatchError{Index: i, Err: fmt.Errorf(
						"%w: queue %q key %q is held by job %s with a different request",
						core.ErrIdempotencyConflict, j.Queue, j.IdempotencyKey, held.ID)}
				}
				reused[i] = held
				continue
			}
			inBatch[k] = i
		}
		newPerTask[j.Task]++
	}
	if err := s.checkLimits(newPerTask, now); err != nil {
		return nil, err
	}

	// Pass 2: store the new jobs and answer in request order. A reused item
	// that points into this batch answers with the job stored for its key.
	out := make([]core.EnqueueResult, len(jobs))
	for i := range jobs {
		if reused[i] == nil {
			s.insert(newJobRec(jobs[i]), now)
		}
	}
	for i := range jobs {
		if held := reused[i]; held != nil {
			out[i] = core.EnqueueResult{Job: copyJob(*held), Reused: true}
		} else {
			out[i] = core.EnqueueResult{Job: copyJob(jobs[i])}
		}
	}
	return out, nil
}

// checkLimits refuses a batch that would take a task over the MaxInFlight
// or MaxEnqueuePerSecond of its stored config.
func (s *store) checkLimits(newPerTask map[string]int, now time.Time) error {
	for task, n := range newPerTask {
		cfg, ok := s.taskConfigs[task]
		if !ok {
			continue
		}
		t := s.task(task)
		if cfg.MaxInFlight > 0 {
			if active := int(t.counts.active()); active+n > cfg.MaxInFlight {
				return fmt.Errorf("%w: task %q has %d active jobs, %d more would exceed max in flight %d",
					core.ErrRateLimited, task, active, n, cfg.MaxInFlight)
			}
		}
		if cfg.MaxEnqueuePerSecond > 0 {
			if recent := t.createdWithin(now); recent+n > cfg.MaxEnqueuePerSecond {
				return fmt.Errorf("%w: task %q created %d jobs in the last second, %d more would exceed %d per second",
					core.ErrRateLimited, task, recent, n, cfg.MaxEnqueuePerSecond)
			}
		}
	}
	return nil
}
