package admin

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/boson-go/boson/core"
)

// The operations capabilities are optional: every backend the handler
// reads must offer one before the handler uses it, and otherwise the call
// fails with core.ErrUnsupported (501 from the API).

// capable returns bs, each as the optional interface T, or an error
// wrapping core.ErrUnsupported that names what is missing.
func capable[T any](bs []core.QueueBackend, what string) ([]T, error) {
	out := make([]T, 0, len(bs))
	for _, b := range bs {
		v, ok := b.(T)
		if !ok {
			return nil, fmt.Errorf("%w: the store does not offer %s", core.ErrUnsupported, what)
		}
		out = append(out, v)
	}
	return out, nil
}

// backendsFor returns the backends a queue-scoped or unscoped call reads.
func (s stores) backendsFor(queue string) ([]core.QueueBackend, error) {
	if queue == "" {
		return s.all(), nil
	}
	b, err := s.forQueue(queue)
	if err != nil {
		return nil, err
	}
	return []core.QueueBackend{b}, nil
}

// foundJob is a job of a search with the backend that holds it.
type foundJob struct {
	core.Job
	b core.QueueBackend
}

// searchJobs returns one page of jobs matching q, merged across backends
// by id as listJobs merges.
func (s stores) searchJobs(ctx context.Context, q core.JobSearch) ([]foundJob, string, error) {
	bs, err := s.backendsFor(q.Queue)
	if err != nil {
		return nil, "", err
	}
	if err := checkFlowSearch(bs, q); err != nil {
		return nil, "", err
	}
	jss, err := capable[core.JobSearcher](bs, "job search")
	if err != nil {
		return nil, "", err
	}
	var all []foundJob
	more := false
	for i, js := range jss {
		p, err := js.SearchJobs(ctx, q)
		if err != nil {
			return nil, "", err
		}
		for _, j := range p.Jobs {
			all = append(all, foundJob{Job: j, b: bs[i]})
		}
		more = more || p.Next != ""
	}
	sort.Slice(all, func(i, j int) bool { return (all[i].ID < all[j].ID) != q.Desc })
	if limit := q.PageSize(); len(all) > limit {
		all, more = all[:limit], true
	}
	next := ""
	if more && len(all) > 0 {
		next = all[len(all)-1].ID
	}
	return all, next, nil
}

// countSearch sums the counts of q over the backends it reads.
func (s stores) countSearch(ctx context.Context, q core.JobSearch) (map[core.JobState]int64, error) {
	bs, err := s.backendsFor(q.Queue)
	if err != nil {
		return nil, err
	}
	if err := checkFlowSearch(bs, q); err != nil {
		return nil, err
	}
	jss, err := capable[core.JobSearcher](bs, "job search")
	if err != nil {
		return nil, err
	}
	out := map[core.JobState]int64{}
	for _, js := range jss {
		c, err := js.CountSearch(ctx, q)
		if err != nil {
			return nil, err
		}
		for k, v := range c {
			out[k] += v
		}
	}
	return out, nil
}

func runLess(a, b core.Run) bool {
	if a.JobID != b.JobID {
		return a.JobID < b.JobID
	}
	return a.Token < b.Token
}

// listRuns returns one page of runs matching f, merged across backends in
// (job id, token) order.
func (s stores) listRuns(ctx context.Context, f core.RunFilter) (core.RunPage, error) {
	bs, err := s.backendsFor(f.Queue)
	if err != nil {
		return core.RunPage{}, err
	}
	rrs, err := capable[core.RunReader](bs, "run reading across jobs")
	if err != nil {
		return core.RunPage{}, err
	}
	if len(rrs) == 1 {
		return rrs[0].ListAllRuns(ctx, f)
	}
	var all []core.Run
	more := false
	for _, rr := range rrs {
		p, err := rr.ListAllRuns(ctx, f)
		if err != nil {
			return core.RunPage{}, err
		}
		all = append(all, p.Runs...)
		more = more || p.Next != ""
	}
	sort.Slice(all, func(i, j int) bool { return runLess(all[i], all[j]) != f.Desc })
	if limit := f.PageSize(); len(all) > limit {
		all, more = all[:limit], true
	}
	page := core.RunPage{Runs: all}
	if more && len(all) > 0 {
		page.Next = all[len(all)-1].ID
	}
	return page, nil
}

// countRuns sums run counts of f over the backends it reads.
func (s stores) countRuns(ctx context.Context, f core.RunFilter) (map[core.RunStatus]int64, error) {
	bs, err := s.backendsFor(f.Queue)
	if err != nil {
		return nil, err
	}
	rrs, err := capable[core.RunReader](bs, "run reading across jobs")
	if err != nil {
		return nil, err
	}
	out := map[core.RunStatus]int64{}
	for _, rr := range rrs {
		c, err := rr.CountRuns(ctx, f)
		if err != nil {
			return nil, err
		}
		for k, v := range c {
			out[k] += v
		}
	}
	return out, nil
}

// getRun returns the run with id runID from whichever backend holds it.
func (s stores) getRun(ctx context.Context, runID string) (core.Run, error) {
	rrs, err := capable[core.RunReader](s.all(), "run reading across jobs")
	if err != nil {
		return core.Run{}, err
	}
	for _, rr := range rrs {
		r, err := rr.GetRun(ctx, runID)
		if err == nil || !errors.Is(err, core.ErrNotFound) {
			return r, err
		}
	}
	return core.Run{}, fmt.Errorf("%w: run %q", core.ErrNotFound, runID)
}

// listTasks merges every backend's tasks by name.
func (s stores) listTasks(ctx context.Context) ([]core.TaskInfo, error) {
	tls, err := capable[core.TaskLister](s.all(), "task listing")
	if err != nil {
		return nil, err
	}
	byName := map[string]*core.TaskInfo{}
	var names []string
	for _, tl := range tls {
		ts, err := tl.ListTasks(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			cur, ok := byName[t.Name]
			if !ok {
				cur = &core.TaskInfo{Name: t.Name, Counts: map[core.JobState]int64{}}
				byName[t.Name] = cur
				names = append(names, t.Name)
			}
			for k, v := range t.Counts {
				cur.Counts[k] += v
			}
			cur.HasConfig = cur.HasConfig || t.HasConfig
		}
	}
	sort.Strings(names)
	out := make([]core.TaskInfo, 0, len(names))
	for _, n := range names {
		out = append(out, *byName[n])
	}
	return out, nil
}

// deleteJob deletes job id on the backend that holds it.
func (s stores) deleteJob(ctx context.Context, id string, force bool) error {
	if _, err := capable[core.JobDeleter](s.all(), "job deletion"); err != nil {
		return err
	}
	b, _, err := s.findJob(ctx, id)
	if err != nil {
		return err
	}
	return b.(core.JobDeleter).DeleteJob(ctx, id, force)
}

// deleteQueueStep runs one step of deleting queue on its backend.
func (s stores) deleteQueueStep(ctx context.Context, req core.DeleteQueueRequest) (core.DeleteQueueResult, error) {
	bs, err := s.backendsFor(req.Queue)
	if err != nil {
		return core.DeleteQueueResult{}, err
	}
	ds, err := capable[core.JobDeleter](bs, "queue deletion")
	if err != nil {
		return core.DeleteQueueResult{}, err
	}
	return ds[0].DeleteQueue(ctx, req)
}

// jobPage lists one page of q: through the search capability when q sets a
// search field, else through ListJobs, which every backend offers.
func (s stores) jobPage(ctx context.Context, q core.JobSearch) (core.JobPage, error) {
	if !hasSearch(q) {
		return s.listJobs(ctx, q.JobFilter)
	}
	found, next, err := s.searchJobs(ctx, q)
	if err != nil {
		return core.JobPage{}, err
	}
	page := core.JobPage{Jobs: make([]core.Job, len(found)), Next: next}
	for i, f := range found {
		page.Jobs[i] = f.Job
	}
	return page, nil
}
