package mem

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/boson-go/boson/core"
)

// Enqueue stores a batch of jobs atomically: every item is stored or reused,
// or nothing is. It validates the batch and builds the records before
// taking the lock, doing what [core.PrepareJobs] does except for the id and
// the times; under the lock it reads the clock, resolves idempotency keys,
// checks the task limits of the new jobs, and only then makes the ids and
// stores the jobs. Making the ids under the lock keeps every index in id
// order by appending. Cost: O(k) for k items in the common case, O(k log n)
// at worst.
func (b *Backend) Enqueue(ctx context.Context, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	if err := b.usable(ctx); err != nil {
		return nil, err
	}
	if err := b.limits.ValidateBatch("batch size", len(reqs)); err != nil {
		return nil, err
	}
	keys, size := false, 0
	for i := range reqs {
		if err := core.ValidateRequest(reqs[i], b.limits); err != nil {
			return nil, &core.BatchError{Index: i, Err: err}
		}
		keys = keys || reqs[i].IdempotencyKey != ""
		size += len(reqs[i].Payload)
	}
	// One allocation holds the records of the batch, one their bodies and
	// one the backend's copies of its payloads.
	recs := make([]jobRec, len(reqs))
	bodies := make([]jobBody, len(reqs))
	arena := make([]byte, 0, size)
	for i := range reqs {
		r := &recs[i]
		r.jobBody = &bodies[i]
		r.init()
		prepare(&r.job, &reqs[i], &arena)
		if r.job.Fingerprint == "" {
			if i > 0 && sameFingerprint(&reqs[i], &reqs[i-1]) {
				r.job.Fingerprint = recs[i-1].job.Fingerprint
			} else {
				r.job.Fingerprint = core.Fingerprint(reqs[i])
			}
		}
	}

	if err := b.lock(ctx); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	s := b.s
	now := b.now()

	// Pass 1: resolve idempotency keys and count the new jobs per task. A
	// stored job holds its key while its unique mode says so
	// (core.HoldsKey); a new job takes a key that no job holds.
	// Nothing changes until every item has passed.
	var reused []*core.Job // the job an item reuses, if any
	if keys {
		reused = make([]*core.Job, len(recs))
		inBatch := map[idemKey]int{} // key -> index of its first item in this batch
		for i := range recs {
			j := &recs[i].job
			if j.IdempotencyKey == "" {
				continue
			}
			k := idemKey{j.Queue, j.IdempotencyKey}
			var held *core.Job
			holder := ""
			if r := s.idem[k]; r != nil && !r.deleted {
				if body := r.view(); core.HoldsKey(body.job, now) {
					held = &body.job
					holder = "job " + held.ID
				}
			}
			if first, ok := inBatch[k]; ok && held == nil {
				held, holder = &recs[first].job, fmt.Sprintf("item %d of this batch", first)
			}
			if held != nil {
				if held.Fingerprint != j.Fingerprint {
					return nil, &core.BatchError{Index: i, Err: fmt.Errorf(
						"%w: queue %q key %q is held by %s with a different request",
						core.ErrIdempotencyConflict, j.Queue, j.IdempotencyKey, holder)}
				}
				reused[i] = held
				continue
			}
			inBatch[k] = i
		}
	}
	if len(s.taskConfigs) > 0 {
		newPerTask := map[string]int{}
		for i := range recs {
			if reused == nil || reused[i] == nil {
				newPerTask[recs[i].job.Task]++
			}
		}
		if err := s.checkLimits(newPerTask, now); err != nil {
			return nil, err
		}
	}

	// Pass 2: store the new jobs and answer in request order. A reused item
	// that points into this batch answers with the job stored for its key.
	s.holdSignals()
	var prev *jobRec
	for i := range recs {
		if reused != nil && reused[i] != nil {
			continue
		}
		r := &recs[i]
		j := &r.job
		j.ID = core.NewID(now)
		j.CreatedAt = now
		j.RunAt = now
		if at := reqs[i].RunAt; !at.IsZero() && at.After(now) {
			j.RunAt = at.UTC().Truncate(time.Microsecond)
		}
		s.insert(r, prev, now)
		prev = r
	}
	s.releaseSignals()

	out := make([]core.EnqueueResult, len(recs))
	outArena := make([]byte, 0, size)
	for i := range recs {
		if reused != nil && reused[i] != nil {
			out[i] = core.EnqueueResult{Job: copyJob(*reused[i]), Reused: true}
			continue
		}
		out[i].Job = recs[i].job
		copyOut(&out[i].Job, &outArena)
	}
	return out, nil
}

// prepare turns a valid request into the job to store in *j, as
// [core.PrepareJobs] does, with its own copies of the payload (taken from
// arena) and headers, but without id, CreatedAt and RunAt, which Enqueue
// sets under the lock, and leaves an empty fingerprint for the caller to
// compute.
func prepare(j *core.Job, r *core.EnqueueRequest, arena *[]byte) {
	*j = core.RequestJob(r)
	j.Payload = carve(arena, r.Payload)
	j.Headers = maps.Clone(r.Headers)
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
