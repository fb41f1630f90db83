package natsq

import (
	"fmt"
	"sort"
	"time"

	"github.com/boson-go/boson/core"
)

// decide sets the time command c is decided at: the time it carries when
// its issuer has a DecisionClock, else ts, the timestamp the server stored
// its message with — but never before the newest timestamp applied before.
// Every replica sees the same message with the same timestamp, so every
// replica decides at the same time, and no process's clock takes part.
func (s *state) decide(c *command, ts time.Time) {
	ts = ts.UTC().Truncate(time.Microsecond)
	if ts.Before(s.lastTS) {
		ts = s.lastTS
	}
	s.lastTS = ts
	if c.Now.IsZero() {
		c.Now, c.serverTime = ts, true
	}
}

// errUnknownCommand and errNewerCommand mark a command this version cannot
// apply.
var (
	errUnknownCommand = fmt.Errorf("%w: unknown command (was the log written by a newer version?)", core.ErrUnsupported)
	errNewerCommand   = fmt.Errorf("%w: command of a newer version", core.ErrUnsupported)
)

// apply executes one command against the replica. It is a pure function of
// the state and the command: the same log gives the same state in every
// process, which is what makes the log the single source of truth. A
// non-nil error means the replica cannot apply the command at all (an
// unknown command, or a state that breaks an invariant); the replica must
// then stop rather than go on with a state the others do not share.
func (s *state) apply(c *command) (out outcome, fatal error) {
	defer func() {
		if r := recover(); r != nil {
			fatal = fmt.Errorf("natsq: %w: applying %s command %d of %s broke an invariant: %v", core.ErrInvalidState, c.Op, c.Req, c.Origin, r)
		}
	}()
	return s.applyCmd(c)
}

func (s *state) applyCmd(c *command) (outcome, error) {
	if c.V > commandVersion {
		return outcome{}, fmt.Errorf("natsq: %w: %s command %d of %s has version %d, this replica applies up to %d", errNewerCommand, c.Op, c.Req, c.Origin, c.V, commandVersion)
	}
	s.now = c.Now
	switch c.Op {
	case opEnqueue:
		return s.applyEnqueue(c), nil
	case opClaim:
		return s.applyClaim(c)
	case opHeartbeat:
		return s.applyHeartbeat(c), nil
	case opComplete:
		return s.applyComplete(c), nil
	case opFail:
		return s.applyFail(c), nil
	case opSleep:
		return s.applySleep(c), nil
	case opCheckpoint:
		return s.applyCheckpoint(c), nil
	case opRescue:
		return s.applyRescue(c), nil
	case opCancel:
		return s.applyCancel(c), nil
	case opRetry:
		return s.applyRetry(c), nil
	case opTaskConfig:
		if c.TaskConfig != nil {
			s.taskCfg[c.TaskConfig.Task] = *c.TaskConfig
			s.configChanged(c.TaskConfig.Task)
		}
		return outcome{}, nil
	case opQueueCfg:
		if c.QueueConfig != nil {
			s.queueCfg[c.QueueConfig.Queue] = *c.QueueConfig
			s.touched[c.QueueConfig.Queue] = struct{}{}
		}
		return outcome{}, nil
	case opCleanup:
		return s.applyCleanup(c)
	case opDeleteJob:
		return s.applyDeleteJob(c), nil
	case opDeleteQ:
		return s.applyDeleteQueue(c)
	case opCreateQueue:
		return s.applyCreateQueue(c), nil
	case opAwait:
		return s.applyAwait(c), nil
	case opBulk:
		return s.applyBulk(c)
	}
	return outcome{}, fmt.Errorf("natsq: %w: %q, command %d of %s", errUnknownCommand, c.Op, c.Req, c.Origin)
}

func (s *state) applyEnqueue(c *command) outcome {
	if c.serverTime {
		// The issuer left the times to the server: a job is created at the
		// command's timestamp and due then unless it asked for later.
		for i := range c.Jobs {
			j := &c.Jobs[i]
			j.CreatedAt = c.Now
			if !j.RunAt.After(c.Now) {
				j.RunAt = c.Now
			}
		}
	}
	res := make([]core.EnqueueResult, len(c.Jobs))
	batchKeys := map[idemKey]int{}
	newPerTask := map[string]int{}
	for i, j := range c.Jobs {
		if j.IdempotencyKey != "" {
			k := idemKey{j.Queue, j.IdempotencyKey}
			if prev, ok := batchKeys[k]; ok {
				if c.Jobs[prev].Fingerprint != j.Fingerprint {
					return outcome{err: &core.BatchError{Index: i, Err: fmt.Errorf("%w: key %q is used twice in the batch with different requests", core.ErrIdempotencyConflict, j.IdempotencyKey)}}
				}
				res[i] = core.EnqueueResult{Reused: true}
				res[i].Job.ID = c.Jobs[prev].ID // filled in below
				continue
			}
			if r, ok := s.idem[k]; ok && core.HoldsKey(r.job, c.Now) {
				if r.job.Fingerprint != j.Fingerprint {
					return outcome{err: &core.BatchError{Index: i, Err: fmt.Errorf("%w: key %q is held by job %s", core.ErrIdempotencyConflict, j.IdempotencyKey, r.job.ID)}}
				}
				res[i] = core.EnqueueResult{Job: copyJob(r.job), Reused: true}
				continue
			}
			batchKeys[k] = i
		}
		newPerTask[j.Task]++
	}
	tasks := make([]string, 0, len(newPerTask))
	for t := range newPerTask {
		tasks = append(tasks, t)
	}
	sort.Strings(tasks)
	for _, t := range tasks {
		cfg, ok := s.taskCfg[t]
		if !ok {
			continue
		}
		n := newPerTask[t]
		if cfg.MaxInFlight > 0 && int(s.active[t])+n > cfg.MaxInFlight {
			return outcome{err: fmt.Errorf("%w: task %s has %d active jobs, %d more would exceed max in flight %d", core.ErrRateLimited, t, s.active[t], n, cfg.MaxInFlight)}
		}
		if cfg.MaxEnqueuePerSecond > 0 {
			if recent := s.createdWithin(t, c.Now); recent+n > cfg.MaxEnqueuePerSecond {
				return outcome{err: fmt.Errorf("%w: task %s had %d jobs created within the last second, %d more would exceed %d per second", core.ErrRateLimited, t, recent, n, cfg.MaxEnqueuePerSecond)}
			}
		}
	}
	for i, j := range c.Jobs {
		if res[i].Reused {
			continue
		}
		if _, dup := s.jobs[j.ID]; dup {
			return outcome{err: fmt.Errorf("%w: job id %s exists", core.ErrInvalidState, j.ID)}
		}
	}
	for i, j := range c.Jobs {
		if res[i].Reused {
			continue
		}
		r := s.insert(j)
		res[i].Job = copyJob(r.job)
	}
	for i := range res {
		if res[i].Reused && res[i].Job.Queue == "" {
			res[i].Job = copyJob(s.jobs[res[i].Job.ID].job)
		}
	}
	return outcome{enqueued: res}
}

// cancelJob moves an active job to cancelled, closing its open run. A job
// cancelled while its current wait has CancelChildren cancels the awaited
// jobs not yet counted in the same step.
func (s *state) cancelJob(r *jobRec, c *command, reason string) {
	var cascade *waitRec
	if w := s.waits[r.job.ID]; w != nil && w.wait.CancelChildren && w.current(r) {
		cascade = w
	}
	s.unindex(r)
	if r.job.State == core.StateRunning {
		r.closeRun(core.RunCancelled, c.Now, reason)
	}
	r.job.State = core.StateCancelled
	r.job.FinishedAt = c.Now
	r.job.LastError = reason
	s.index(r)
	if cascade != nil {
		s.cancelChildren(cascade, c, reason)
	}
}

func (s *state) applyClaim(c *command) (outcome, error) {
	now := c.Now
	if s.queueCfg[c.Queue].Paused {
		return outcome{}, nil
	}
	// Due jobs past a cancellation deadline are cancelled, not handed out.
	if m := s.deadlined[c.Queue]; len(m) > 0 {
		var doomed []*jobRec
		for _, r := range m {
			j := &r.job
			if (j.State == core.StateQueued || j.State == core.StateSleeping) && !j.RunAt.After(now) {
				if _, passed := core.DeadlinePassed(*j, now); passed {
					doomed = append(doomed, r)
				}
			}
		}
		for _, r := range doomed {
			if !r.job.State.Active() {
				continue // cancelled with a job it was awaited by
			}
			reason, _ := core.DeadlinePassed(r.job, now)
			s.cancelJob(r, c, reason)
		}
	}
	q := s.readyOf(c.Queue)
	if q == nil {
		return outcome{}, nil
	}
	nowMicros := micros(now)
	s.rollRate(nowMicros)
	late := s.lateForRate(nowMicros)
	s.promote(q, nowMicros)
	jobs := make([]core.Job, 0, min(c.Limit, 16))
	for len(jobs) < c.Limit && !s.queueFull(c.Queue) {
		if q = s.readyOf(c.Queue); q == nil {
			break
		}
		k, ok := q.best()
		if !ok {
			break
		}
		r := s.jobs[k.id]
		if r == nil {
			return outcome{}, fmt.Errorf("natsq: %w: the ready index of queue %s names job %s, which the replica does not hold", core.ErrInvalidState, c.Queue, k.id)
		}
		if k.runAt > nowMicros {
			s.demote(r)
			continue
		}
		if late && s.rateGoverned(&r.job) {
			break // a claim of a later second starts it, counted there
		}
		if g, rate := s.heldBack(q, &r.job); g != nil {
			s.closeGate(g, rate)
			continue
		}
		s.unindex(r)
		j := &r.job
		if j.State != core.StateSleeping {
			j.Attempt++
		}
		if j.FirstStartedAt.IsZero() {
			j.FirstStartedAt = now
		}
		j.State = core.StateRunning
		j.Lease = core.Lease{JobID: j.ID, WorkerID: c.WorkerID, Token: j.Lease.Token + 1, ExpiresAt: now.Add(c.TTL)}
		r.runs = append(r.runs, core.Run{
			ID: core.RunID(j.ID, j.Lease.Token), JobID: j.ID, Attempt: j.Attempt, WorkerID: c.WorkerID,
			Token: j.Lease.Token, Status: core.RunRunning, StartedAt: now,
		})
		s.index(r)
		s.counted(j)
		jobs = append(jobs, copyJob(*j))
	}
	return outcome{jobs: jobs}, nil
}

// fenced returns the job held by lease, or an error wrapping ErrLeaseLost.
func (s *state) fenced(l core.Lease) (*jobRec, error) {
	r, ok := s.jobs[l.JobID]
	if !ok {
		return nil, fmt.Errorf("%w: job %s does not exist", core.ErrLeaseLost, l.JobID)
	}
	if r.job.State != core.StateRunning || r.job.Lease.Token != l.Token {
		return nil, fmt.Errorf("%w: job %s is %s under token %d, the lease has token %d", core.ErrLeaseLost, l.JobID, r.job.State, r.job.Lease.Token, l.Token)
	}
	return r, nil
}

func (s *state) applyHeartbeat(c *command) outcome {
	r, err := s.fenced(c.Lease)
	if err != nil {
		return outcome{err: err}
	}
	if reason, passed := core.DeadlinePassed(r.job, c.Now); passed {
		s.cancelJob(r, c, reason)
		return outcome{err: fmt.Errorf("%w: job %s was cancelled: %s", core.ErrLeaseLost, r.job.ID, reason)}
	}
	s.unindex(r)
	r.job.Lease.ExpiresAt = c.Now.Add(c.TTL)
	s.index(r)
	return outcome{lease: r.job.Lease}
}

func (s *state) applyComplete(c *command) outcome {
	errs := make([]error, len(c.Completions))
	for n, it := range c.Completions {
		r, err := s.fenced(it.Lease)
		if err != nil {
			errs[n] = err
			continue
		}
		s.unindex(r)
		r.closeRun(core.RunSucceeded, c.Now, "")
		r.job.State = core.StateSucceeded
		r.job.Result = it.Result
		r.job.FinishedAt = c.Now
		s.index(r)
	}
	return outcome{errs: errs}
}

func (s *state) applyFail(c *command) outcome {
	r, err := s.fenced(c.Lease)
	if err != nil {
		return outcome{err: err}
	}
	s.unindex(r)
	r.closeRun(core.RunFailed, c.Now, c.Error)
	r.job.LastError = c.Error
	if c.Terminal || r.job.Attempt >= r.job.MaxAttempts {
		r.job.State = core.StateFailed
		r.job.FinishedAt = c.Now
		r.holdsSeq = s.holdsOnFailure(r)
	} else {
		r.job.State = core.StateQueued
		r.job.RunAt = c.Now
		if c.RetryAt.After(c.Now) {
			r.job.RunAt = c.RetryAt
		}
	}
	s.index(r)
	return outcome{state: r.job.State}
}

func (s *state) applySleep(c *command) outcome {
	r, err := s.fenced(c.Lease)
	if err != nil {
		return outcome{err: err}
	}
	s.unindex(r)
	r.closeRun(core.RunSleeping, c.Now, "")
	r.job.State = core.StateSleeping
	r.job.RunAt = c.Now
	if c.Until.After(c.Now) {
		r.job.RunAt = c.Until
	}
	s.index(r)
	return outcome{}
}

func (s *state) applyCheckpoint(c *command) outcome {
	r, err := s.fenced(c.Lease)
	if err != nil {
		return outcome{err: err}
	}
	if cp, ok := r.checkpoints[c.Step]; ok {
		return outcome{value: cloneBytes(cp.Value)}
	}
	if r.checkpoints == nil {
		r.checkpoints = map[string]core.Checkpoint{}
	}
	v := c.Value
	if v == nil {
		v = []byte{}
	}
	r.checkpoints[c.Step] = core.Checkpoint{JobID: r.job.ID, Step: c.Step, Value: v, CreatedAt: c.Now}
	return outcome{value: cloneBytes(v)}
}

func (s *state) applyRescue(c *command) outcome {
	now := c.Now
	type cand struct {
		at time.Time
		r  *jobRec
	}
	var cands []cand
	seen := map[string]bool{}
	for _, m := range s.deadlined {
		for _, r := range m {
			if d, ok := core.Deadline(r.job); ok && !now.Before(d) {
				cands = append(cands, cand{d, r})
				seen[r.job.ID] = true
			}
		}
	}
	for _, r := range s.running {
		if !seen[r.job.ID] && !r.job.Lease.ExpiresAt.After(now) {
			cands = append(cands, cand{r.job.Lease.ExpiresAt, r})
		}
	}
	sort.Slice(cands, func(a, b int) bool {
		if !cands[a].at.Equal(cands[b].at) {
			return cands[a].at.Before(cands[b].at)
		}
		return cands[a].r.job.ID < cands[b].r.job.ID
	})
	if len(cands) > c.Limit {
		cands = cands[:c.Limit]
	}
	var res core.RescueResult
	for _, cd := range cands {
		r := cd.r
		if !r.job.State.Active() {
			continue // cancelled with a job it was awaited by
		}
		if reason, passed := core.DeadlinePassed(r.job, now); passed {
			s.cancelJob(r, c, reason)
			res.Cancelled++
			continue
		}
		s.unindex(r)
		r.closeRun(core.RunLost, now, "lease expired")
		if r.job.Attempt >= r.job.MaxAttempts {
			r.job.State = core.StateFailed
			r.job.FinishedAt = now
			r.job.LastError = "lease expired"
			r.holdsSeq = s.holdsOnFailure(r)
			res.Failed++
		} else {
			r.job.State = core.StateQueued
			r.job.RunAt = now
			res.Requeued++
		}
		s.index(r)
	}
	return outcome{rescue: res}
}

func (s *state) applyCancel(c *command) outcome {
	return jobOutcome(s.cancelID(c.JobID, c.Reason, c))
}

// cancelID is the transition of a cancel command on job id: a queued,
// running or sleeping job is cancelled with reason, a cancelled one is
// left as it is (without error), and a finished or missing one is refused
// with an error wrapping core.ErrInvalidState or core.ErrNotFound. The
// cancel and bulk commands share it.
func (s *state) cancelID(id, reason string, c *command) (*jobRec, error) {
	r, ok := s.jobs[id]
	if !ok {
		return nil, fmt.Errorf("%w: job %s", core.ErrNotFound, id)
	}
	switch r.job.State {
	case core.StateCancelled:
		return r, nil
	case core.StateSucceeded, core.StateFailed:
		return nil, fmt.Errorf("%w: job %s is %s", core.ErrInvalidState, id, r.job.State)
	}
	s.cancelJob(r, c, reason)
	return r, nil
}

func (s *state) applyRetry(c *command) outcome {
	return jobOutcome(s.retryID(c.JobID, c.Now))
}

// retryID is the transition of a retry command on job id at now: a failed
// or cancelled job is queued again, due now, with one more attempt when it
// spent its budget; any other state is refused with an error wrapping
// core.ErrInvalidState, a missing job with core.ErrNotFound. The retry and
// bulk commands share it.
func (s *state) retryID(id string, now time.Time) (*jobRec, error) {
	r, ok := s.jobs[id]
	if !ok {
		return nil, fmt.Errorf("%w: job %s", core.ErrNotFound, id)
	}
	if r.job.State != core.StateFailed && r.job.State != core.StateCancelled {
		return nil, fmt.Errorf("%w: job %s is %s; only failed or cancelled jobs can be retried", core.ErrInvalidState, id, r.job.State)
	}
	if err := s.retakeKey(r, now); err != nil {
		return nil, err
	}
	s.unindex(r)
	r.holdsSeq = false
	r.job.State = core.StateQueued
	r.job.RunAt = now
	r.job.FinishedAt = time.Time{}
	if r.job.Attempt >= r.job.MaxAttempts {
		r.job.MaxAttempts = r.job.Attempt + 1
	}
	s.index(r)
	return r, nil
}

// jobOutcome is the outcome of a per-job transition: a copy of the job it
// left, or its error.
func jobOutcome(r *jobRec, err error) outcome {
	if err != nil {
		return outcome{err: err}
	}
	return outcome{job: copyJob(r.job)}
}

func (s *state) applyCleanup(c *command) (outcome, error) {
	before := micros(c.Before)
	var doomed []*jobRec
	var missing string
	s.finished.Ascend(func(k finKey) bool {
		if k.at >= before || len(doomed) >= c.Limit {
			return false
		}
		r := s.jobs[k.id]
		if r == nil {
			missing = k.id
			return false
		}
		if c.Queue == "" || r.job.Queue == c.Queue {
			doomed = append(doomed, r)
		}
		return true
	})
	if missing != "" {
		return outcome{}, fmt.Errorf("natsq: %w: the retention index names job %s, which the replica does not hold", core.ErrInvalidState, missing)
	}
	for _, r := range doomed {
		s.remove(r)
	}
	return outcome{count: len(doomed)}, nil
}

// applyDeleteJob removes one job with its runs, checkpoints and result and
// frees its idempotency key. A running job is refused unless the command
// forces it; a forced deletion supersedes the lease, since every fenced
// command of the old lease then finds no job and fails with ErrLeaseLost.
func (s *state) applyDeleteJob(c *command) outcome {
	return outcome{err: s.deleteID(c.JobID, c.Force)}
}

// deleteID is the transition of a delete_job command on job id: the job
// is removed unless it is running and force is false, which is refused
// with an error wrapping core.ErrInvalidState (a missing job with
// core.ErrNotFound). The delete_job and bulk commands share it.
func (s *state) deleteID(id string, force bool) error {
	r, ok := s.jobs[id]
	if !ok {
		return fmt.Errorf("%w: job %s", core.ErrNotFound, id)
	}
	if r.job.State == core.StateRunning && !force {
		return fmt.Errorf("%w: job %s is running; cancel it first or force the deletion", core.ErrInvalidState, id)
	}
	s.remove(r)
	return nil
}

// applyDeleteQueue removes up to c.Limit jobs of c.Queue, whatever their
// state, the first ones by id, so that every replica removes the same
// ones; once the queue holds no job, it removes the queue's config too.
func (s *state) applyDeleteQueue(c *command) (outcome, error) {
	var doomed []*jobRec
	var missing string
	walkIDs(s.qids[c.Queue], "", false, func(id string) bool {
		if len(doomed) >= c.Limit {
			return false
		}
		r := s.jobs[id]
		if r == nil {
			missing = id
			return false
		}
		doomed = append(doomed, r)
		return true
	})
	if missing != "" {
		return outcome{}, fmt.Errorf("natsq: %w: the index of queue %s names job %s, which the replica does not hold", core.ErrInvalidState, c.Queue, missing)
	}
	for _, r := range doomed {
		s.remove(r)
	}
	done := s.qids[c.Queue] == nil
	if done {
		delete(s.queueCfg, c.Queue)
		delete(s.declared, c.Queue)
		s.touched[c.Queue] = struct{}{}
	}
	return outcome{count: len(doomed), done: done}, nil
}
