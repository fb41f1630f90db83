package mem

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/boson-go/boson/core"
)

// The operations capabilities. Each takes the Backend's mutex for the
// whole call, like every other method, so a listing sees one state of the
// store and a deletion is one atomic step next to claims and fenced calls.

var (
	_ core.RunReader   = (*Backend)(nil)
	_ core.JobSearcher = (*Backend)(nil)
	_ core.TaskLister  = (*Backend)(nil)
	_ core.JobDeleter  = (*Backend)(nil)
)

// scope returns the narrowest id index that holds every job of queue and
// task (either may be empty for any), with the queue's and the task's
// state when named. ok is false when a named queue or task has no index,
// and then no job matches.
func (s *store) scope(queue, task string) (idx *idIndex, fq *queueState, ft *taskState, ok bool) {
	if queue != "" {
		if fq = s.queues[queue]; fq == nil {
			return nil, nil, nil, false
		}
	}
	if task != "" {
		if ft = s.tasks[task]; ft == nil {
			return nil, nil, nil, false
		}
	}
	switch {
	case fq != nil:
		return &fq.ids, fq, ft, true
	case ft != nil:
		return &ft.ids, fq, ft, true
	}
	return &s.ids, nil, nil, true
}

// inScope reports whether r is a live job of fq and ft (nil for any)
// whose state is one of states (any when empty), without decoding it.
func inScope(r *jobRec, fq *queueState, ft *taskState, states []core.JobState) bool {
	if r.deleted || fq != nil && r.q != fq || ft != nil && r.t != ft {
		return false
	}
	if len(states) == 0 {
		return true
	}
	st := core.AllStates[r.final]
	if r.jobBody != nil {
		st = r.job.State
	}
	return hasState(states, st)
}

// withJob returns run with its job's queue and task set.
func withJob(run core.Run, j *core.Job) core.Run {
	run.Queue, run.Task = j.Queue, j.Task
	return run
}

// GetRun returns the run that runID names, with its job's queue and task,
// or [core.ErrNotFound]; a malformed id gives [core.ErrInvalidArgument].
// Cost: O(log n + runs of the job).
func (b *Backend) GetRun(ctx context.Context, runID string) (core.Run, error) {
	if err := b.usable(ctx); err != nil {
		return core.Run{}, err
	}
	jobID, token, err := core.ParseRunID(runID)
	if err != nil {
		return core.Run{}, err
	}
	if err := b.lock(ctx); err != nil {
		return core.Run{}, err
	}
	defer b.mu.Unlock()
	if r := b.s.ids.find(jobID); r != nil {
		body := r.view()
		for _, run := range body.runs {
			if run.Token == token {
				return withJob(run, &body.job), nil
			}
		}
	}
	return core.Run{}, fmt.Errorf("%w: run %q", core.ErrNotFound, runID)
}

// ListAllRuns returns one page of the runs matching f in (job id, token)
// order, or the reverse when f.Desc, starting strictly after (or before)
// the run in f.Cursor. It walks the narrowest id index the filter allows
// from the cursor's job and reads each job's runs: O(log n) to find the
// cursor plus the jobs and runs it looks at.
func (b *Backend) ListAllRuns(ctx context.Context, f core.RunFilter) (core.RunPage, error) {
	if err := b.usable(ctx); err != nil {
		return core.RunPage{}, err
	}
	if err := core.ValidateRunFilter(f); err != nil {
		return core.RunPage{}, err
	}
	var curJob string
	var curTok int64
	if f.Cursor != "" {
		curJob, curTok, _ = core.ParseRunID(f.Cursor) // validated above
	}
	if err := b.lock(ctx); err != nil {
		return core.RunPage{}, err
	}
	defer b.mu.Unlock()
	s := b.s

	idx, fq, ft, ok := s.scope(f.Queue, f.Task)
	if !ok {
		return core.RunPage{}, nil
	}
	size := f.PageSize()
	var page core.RunPage
	// visit adds r's matching runs past the cursor and reports whether the
	// page is full with one more match waiting (then Next is set).
	visit := func(r *jobRec) (done bool) {
		if !inScope(r, fq, ft, nil) || f.JobID != "" && r.id != f.JobID {
			return false
		}
		body := r.view()
		runs := body.runs
		for k := range runs {
			run := runs[k]
			if f.Desc {
				run = runs[len(runs)-1-k]
			}
			if r.id == curJob && (!f.Desc && run.Token <= curTok || f.Desc && run.Token >= curTok) {
				continue
			}
			run = withJob(run, &body.job)
			if !f.Matches(run) {
				continue
			}
			if len(page.Runs) == size {
				page.Next = page.Runs[size-1].ID
				return true
			}
			page.Runs = append(page.Runs, run)
		}
		return false
	}
	switch {
	case f.JobID != "":
		if r := s.ids.find(f.JobID); r != nil && (curJob == "" || (f.Desc && r.id <= curJob) || (!f.Desc && r.id >= curJob)) {
			visit(r)
		}
	case f.Desc:
		start := idx.len() - 1
		if curJob != "" {
			start = idx.after(curJob) - 1 // the cursor's job, or the one before its place
		}
		for i := start; i >= 0 && !visit(idx.rec(i)); i-- {
		}
	default:
		for i := idx.search(curJob); i < idx.len() && !visit(idx.rec(i)); i++ {
		}
	}
	return page, nil
}

// CountRuns counts the runs matching f by status, omitting zero counts.
// Without a job, queue or time bound it sums counters kept per task:
// O(tasks); otherwise it reads the runs of every job in scope.
func (b *Backend) CountRuns(ctx context.Context, f core.RunFilter) (map[core.RunStatus]int64, error) {
	if err := b.usable(ctx); err != nil {
		return nil, err
	}
	if err := core.ValidateRunFilter(f); err != nil {
		return nil, err
	}
	if err := b.lock(ctx); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	s := b.s

	out := map[core.RunStatus]int64{}
	if f.JobID == "" && f.Queue == "" && f.Since.IsZero() && f.Before.IsZero() {
		add := func(t *taskState) {
			for i, n := range t.runs {
				if st := core.AllRunStatuses[i]; n != 0 && (len(f.Statuses) == 0 || slices.Contains(f.Statuses, st)) {
					out[st] += n
				}
			}
		}
		if f.Task != "" {
			if t := s.tasks[f.Task]; t != nil {
				add(t)
			}
			return out, nil
		}
		for _, t := range s.tasks {
			add(t)
		}
		return out, nil
	}
	idx, fq, ft, ok := s.scope(f.Queue, f.Task)
	if !ok {
		return out, nil
	}
	count := func(r *jobRec) {
		if !inScope(r, fq, ft, nil) {
			return
		}
		body := r.view()
		for _, run := range body.runs {
			if f.Matches(withJob(run, &body.job)) {
				out[run.Status]++
			}
		}
	}
	if f.JobID != "" {
		if r := s.ids.find(f.JobID); r != nil {
			count(r)
		}
		return out, nil
	}
	for i := range idx.len() {
		count(idx.rec(i))
	}
	return out, nil
}

// searchMatch reports whether r is a live job that q selects, decoding a
// frozen job only when the search fields need its body.
func searchMatch(r *jobRec, q *core.JobSearch, fq *queueState, ft *taskState) bool {
	if !inScope(r, fq, ft, q.States) {
		return false
	}
	if !hasSearchFields(q) {
		return true
	}
	j := &r.view().job
	return q.Matches(*j) && (q.LimitKey == "" || j.LimitKey == q.LimitKey) &&
		(q.SequenceKey == "" || j.SequenceKey == q.SequenceKey)
}

// hasSearchFields reports whether q sets a field beyond its JobFilter,
// the flow keys included.
func hasSearchFields(q *core.JobSearch) bool {
	return q.HasSearchFields() || q.LimitKey != "" || q.SequenceKey != ""
}

// SearchJobs returns one page of the jobs matching q in id order (newest
// first when q.Desc), after the id in q.Cursor. With q.IDs it looks up
// those ids; otherwise it walks the narrowest id index, as ListJobs does,
// and tests the search fields on each job it meets: header, id prefix and
// time ranges scan.
func (b *Backend) SearchJobs(ctx context.Context, q core.JobSearch) (core.JobPage, error) {
	if err := b.usable(ctx); err != nil {
		return core.JobPage{}, err
	}
	if err := core.ValidateJobSearch(q); err != nil {
		return core.JobPage{}, err
	}
	if err := b.lock(ctx); err != nil {
		return core.JobPage{}, err
	}
	defer b.mu.Unlock()
	return b.s.search(&q), nil
}

// search is SearchJobs under the lock, for a valid q.
func (s *store) search(q *core.JobSearch) core.JobPage {
	idx, fq, ft, ok := s.scope(q.Queue, q.Task)
	if !ok {
		return core.JobPage{}
	}
	size := q.PageSize()
	var page core.JobPage
	visit := func(r *jobRec) (done bool) {
		if r == nil || !searchMatch(r, q, fq, ft) {
			return false
		}
		if len(page.Jobs) == size {
			page.Next = page.Jobs[size-1].ID
			return true
		}
		page.Jobs = append(page.Jobs, r.copyOut())
		return false
	}
	if len(q.IDs) > 0 {
		want := slices.Clone(q.IDs)
		slices.Sort(want)
		want = slices.Compact(want)
		if q.Desc {
			slices.Reverse(want)
		}
		for _, id := range want {
			if q.Cursor != "" && (!q.Desc && id <= q.Cursor || q.Desc && id >= q.Cursor) {
				continue
			}
			if visit(s.ids.find(id)) {
				break
			}
		}
		return page
	}
	if q.Desc {
		for i := idx.before(q.Cursor); i >= 0 && !visit(idx.rec(i)); i-- {
		}
	} else {
		for i := idx.after(q.Cursor); i < idx.len() && !visit(idx.rec(i)); i++ {
		}
	}
	return page
}

// CountSearch counts the jobs matching q by state, omitting zero counts.
// Without search fields it sums counters as CountJobs does; with them it
// tests every job in scope (only the listed ones with q.IDs).
func (b *Backend) CountSearch(ctx context.Context, q core.JobSearch) (map[core.JobState]int64, error) {
	if err := b.usable(ctx); err != nil {
		return nil, err
	}
	if err := core.ValidateJobSearch(q); err != nil {
		return nil, err
	}
	if err := b.lock(ctx); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	s := b.s

	if !hasSearchFields(&q) {
		return s.countJobs(q.JobFilter), nil
	}
	out := map[core.JobState]int64{}
	idx, fq, ft, ok := s.scope(q.Queue, q.Task)
	if !ok {
		return out, nil
	}
	count := func(r *jobRec) {
		if r != nil && searchMatch(r, &q, fq, ft) {
			out[r.view().job.State]++
		}
	}
	if len(q.IDs) > 0 {
		want := slices.Clone(q.IDs)
		slices.Sort(want)
		for _, id := range slices.Compact(want) {
			count(s.ids.find(id))
		}
		return out, nil
	}
	for i := range idx.len() {
		count(idx.rec(i))
	}
	return out, nil
}

// FindByIdempotencyKey returns a copy of the job of queue that holds key
// now under its unique mode ([core.HoldsKey]), or [core.ErrNotFound]: a
// job whose key is free is not returned, though it may still carry the
// key. Cost: O(1).
func (b *Backend) FindByIdempotencyKey(ctx context.Context, queue, key string) (core.Job, error) {
	if err := b.usable(ctx); err != nil {
		return core.Job{}, err
	}
	if err := core.ValidateKeyLookup(queue, key); err != nil {
		return core.Job{}, err
	}
	if err := b.lock(ctx); err != nil {
		return core.Job{}, err
	}
	defer b.mu.Unlock()
	r := b.s.idem[idemKey{queue, key}]
	if !holdsKey(r, b.now()) {
		return core.Job{}, fmt.Errorf("%w: idempotency key %q of queue %q", core.ErrNotFound, key, queue)
	}
	return r.copyOut(), nil
}

// ListTasks describes every task that has retained jobs or a stored
// config, ordered by name, from the counters kept per task: O(t log t).
func (b *Backend) ListTasks(ctx context.Context) ([]core.TaskInfo, error) {
	if err := b.lock(ctx); err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	s := b.s

	out := []core.TaskInfo{}
	for name, t := range s.tasks {
		if t.counts.total() == 0 {
			continue
		}
		info := core.TaskInfo{Name: name, Counts: map[core.JobState]int64{}}
		_, info.HasConfig = s.taskConfigs[name]
		t.counts.addTo(info.Counts, nil)
		out = append(out, info)
	}
	for name := range s.taskConfigs {
		if t := s.tasks[name]; t == nil || t.counts.total() == 0 {
			out = append(out, core.TaskInfo{Name: name, Counts: map[core.JobState]int64{}, HasConfig: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DeleteJob deletes one job with its runs and checkpoints and releases its
// idempotency key. A running job is refused with [core.ErrInvalidState]
// unless force is set; then it is deleted at once and its lease no longer
// fences anything. Cost: O(log n + runs).
func (b *Backend) DeleteJob(ctx context.Context, jobID string, force bool) error {
	if err := b.usable(ctx); err != nil {
		return err
	}
	if err := core.ValidateJobID(jobID); err != nil {
		return err
	}
	if err := b.lock(ctx); err != nil {
		return err
	}
	defer b.mu.Unlock()
	return b.s.deleteID(jobID, force, b.now())
}

// deleteID is DeleteJob under the lock.
func (s *store) deleteID(jobID string, force bool, now time.Time) error {
	r, err := s.get(jobID)
	if err != nil {
		return err
	}
	if r.jobBody != nil && r.job.State == core.StateRunning && !force {
		return fmt.Errorf("%w: job %s is running; cancel it first or force the deletion", core.ErrInvalidState, jobID)
	}
	s.delete(r, now)
	return nil
}

// DeleteQueue deletes up to req.Limit of the queue's jobs, oldest id
// first, whatever their state, and once the queue has none left its
// config. Cost: O(k log n) for k deletions, plus the deleted records the
// queue's index still holds before its next compaction.
func (b *Backend) DeleteQueue(ctx context.Context, req core.DeleteQueueRequest) (core.DeleteQueueResult, error) {
	if err := b.usable(ctx); err != nil {
		return core.DeleteQueueResult{}, err
	}
	if err := core.ValidateDeleteQueue(req, b.limits); err != nil {
		return core.DeleteQueueResult{}, err
	}
	if err := b.lock(ctx); err != nil {
		return core.DeleteQueueResult{}, err
	}
	defer b.mu.Unlock()
	s := b.s
	now := b.now()

	var res core.DeleteQueueResult
	q := s.queues[req.Queue]
	if q != nil {
		// Collect first: deleting may compact the index being walked.
		var batch []*jobRec
		for i := 0; i < q.ids.len() && len(batch) < req.Limit; i++ {
			if r := q.ids.rec(i); !r.deleted {
				batch = append(batch, r)
			}
		}
		for _, r := range batch {
			s.delete(r, now)
		}
		res.Deleted = len(batch)
	}
	if q == nil || q.counts.total() == 0 {
		delete(s.queueConfigs, req.Queue)
		delete(s.declared, req.Queue)
		res.Done = true
	}
	return res, nil
}
