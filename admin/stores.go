package admin

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"

	"github.com/boson-go/boson/core"
)

// stores answers the handler's questions over one backend or a router.
// Queue-scoped calls go to the backend that serves the queue; job-scoped
// calls try every distinct backend; listings merge them.
type stores struct {
	single core.QueueBackend
	router *core.Router
}

// all returns the distinct backends, each once even when registered under
// several names.
func (s stores) all() []core.QueueBackend {
	if s.single != nil {
		return []core.QueueBackend{s.single}
	}
	var out []core.QueueBackend
	for _, b := range s.router.Backends() {
		dup := false
		for _, o := range out {
			if sameBackend(o, b) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, b)
		}
	}
	return out
}

func sameBackend(a, b core.QueueBackend) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}

func (s stores) forQueue(queue string) (core.QueueBackend, error) {
	if s.single != nil {
		return s.single, nil
	}
	return s.router.Resolve(queue)
}

// findJob returns job id and the backend that holds it, or ErrNotFound.
func (s stores) findJob(ctx context.Context, id string) (core.QueueBackend, core.Job, error) {
	var lastErr error
	for _, b := range s.all() {
		j, err := b.GetJob(ctx, id)
		if err == nil {
			return b, j, nil
		}
		if !errors.Is(err, core.ErrNotFound) {
			return nil, core.Job{}, err
		}
		lastErr = err
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("%w: job %q", core.ErrNotFound, id)
	}
	return nil, core.Job{}, lastErr
}

// listJobs lists one page. With several backends and no queue it merges
// their pages by id: each backend is asked for a page after the same
// cursor, so the merged page is the first Limit ids of the union.
func (s stores) listJobs(ctx context.Context, f core.JobFilter) (core.JobPage, error) {
	bs := s.all()
	if f.Queue != "" {
		b, err := s.forQueue(f.Queue)
		if err != nil {
			return core.JobPage{}, err
		}
		bs = []core.QueueBackend{b}
	}
	if len(bs) == 1 {
		return bs[0].ListJobs(ctx, f)
	}
	limit := f.PageSize()
	var all []core.Job
	more := false
	for _, b := range bs {
		p, err := b.ListJobs(ctx, f)
		if err != nil {
			return core.JobPage{}, err
		}
		all = append(all, p.Jobs...)
		more = more || p.Next != ""
	}
	sort.Slice(all, func(i, j int) bool {
		if f.Desc {
			return all[i].ID > all[j].ID
		}
		return all[i].ID < all[j].ID
	})
	if len(all) > limit {
		all, more = all[:limit], true
	}
	page := core.JobPage{Jobs: all}
	if more && len(all) > 0 {
		page.Next = all[len(all)-1].ID
	}
	return page, nil
}

func (s stores) countJobs(ctx context.Context, f core.JobFilter) (map[core.JobState]int64, error) {
	out := map[core.JobState]int64{}
	for _, b := range s.all() {
		c, err := b.CountJobs(ctx, f)
		if err != nil {
			return nil, err
		}
		for k, v := range c {
			out[k] += v
		}
	}
	return out, nil
}

func (s stores) listQueues(ctx context.Context) ([]core.QueueInfo, error) {
	byName := map[string]*core.QueueInfo{}
	var names []string
	for _, b := range s.all() {
		qs, err := b.ListQueues(ctx)
		if err != nil {
			return nil, err
		}
		for _, q := range qs {
			cur, ok := byName[q.Queue]
			if !ok {
				cur = &core.QueueInfo{Queue: q.Queue, Jobs: map[core.JobState]int64{}}
				byName[q.Queue] = cur
				names = append(names, q.Queue)
			}
			for k, v := range q.Jobs {
				cur.Jobs[k] += v
			}
			cur.Paused = cur.Paused || q.Paused
			cur.Declared = cur.Declared || q.Declared
		}
	}
	sort.Strings(names)
	out := make([]core.QueueInfo, 0, len(names))
	for _, n := range names {
		out = append(out, *byName[n])
	}
	return out, nil
}

func (s stores) taskStats(ctx context.Context, task string) (core.TaskStats, error) {
	out := core.TaskStats{Task: task, Jobs: map[core.JobState]int64{}, Runs: map[core.RunStatus]int64{}}
	for _, b := range s.all() {
		st, err := b.TaskStats(ctx, task)
		if err != nil {
			return core.TaskStats{}, err
		}
		for k, v := range st.Jobs {
			out.Jobs[k] += v
		}
		for k, v := range st.Runs {
			out.Runs[k] += v
		}
		out.RunTime += st.RunTime
	}
	return out, nil
}

// getTaskConfig returns the first stored config of task, or ErrNotFound.
func (s stores) getTaskConfig(ctx context.Context, task string) (core.TaskConfig, error) {
	for _, b := range s.all() {
		c, err := b.GetTaskConfig(ctx, task)
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, core.ErrNotFound) {
			return core.TaskConfig{}, err
		}
	}
	return core.TaskConfig{}, fmt.Errorf("%w: no config stored for task %q", core.ErrNotFound, task)
}

// putTaskConfig stores cfg on every backend, so that its limits hold
// wherever the task's jobs are enqueued.
func (s stores) putTaskConfig(ctx context.Context, cfg core.TaskConfig) error {
	for _, b := range s.all() {
		if err := b.PutTaskConfig(ctx, cfg); err != nil {
			return err
		}
	}
	return nil
}

// taskNames returns extra plus the task names of the newest scan jobs of
// each backend, sorted and distinct.
func (s stores) taskNames(ctx context.Context, extra []string, scan int) ([]string, error) {
	seen := map[string]bool{}
	for _, t := range extra {
		seen[t] = true
	}
	for _, b := range s.all() {
		f := core.JobFilter{Desc: true}
		for left := scan; left > 0; {
			f.Limit = min(left, core.MaxPageSize)
			p, err := b.ListJobs(ctx, f)
			if err != nil {
				return nil, err
			}
			for _, j := range p.Jobs {
				seen[j.Task] = true
			}
			left -= len(p.Jobs)
			if p.Next == "" || len(p.Jobs) == 0 {
				break
			}
			f.Cursor = p.Next
		}
	}
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	sort.Strings(out)
	return out, nil
}

// setPaused reads the queue's stored config, changes only Paused and
// stores it again, keeping every other field.
func (s stores) setPaused(ctx context.Context, queue string, paused bool) (core.QueueConfig, error) {
	b, err := s.forQueue(queue)
	if err != nil {
		return core.QueueConfig{}, err
	}
	cfg, err := b.GetQueueConfig(ctx, queue)
	if err != nil {
		return core.QueueConfig{}, err
	}
	cfg.Queue = queue
	cfg.Paused = paused
	if err := b.PutQueueConfig(ctx, cfg); err != nil {
		return core.QueueConfig{}, err
	}
	return cfg, nil
}
