package conformance

import (
	"errors"
	"slices"

	"github.com/boson-go/boson/core"
)

// Accessors of the operations capabilities. Each fails the case when the
// harness declares the capability but the backend type lacks it.

func (e *env) runReader() core.RunReader {
	e.t.Helper()
	rr, ok := e.b.(core.RunReader)
	if !ok {
		e.t.Fatalf("the harness declares Runs but %T does not implement core.RunReader", e.b)
	}
	return rr
}

func (e *env) searcher() core.JobSearcher {
	e.t.Helper()
	js, ok := e.b.(core.JobSearcher)
	if !ok {
		e.t.Fatalf("the harness declares Search but %T does not implement core.JobSearcher", e.b)
	}
	return js
}

func (e *env) taskLister() core.TaskLister {
	e.t.Helper()
	tl, ok := e.b.(core.TaskLister)
	if !ok {
		e.t.Fatalf("the harness declares Tasks but %T does not implement core.TaskLister", e.b)
	}
	return tl
}

func (e *env) deleter() core.JobDeleter {
	e.t.Helper()
	jd, ok := e.b.(core.JobDeleter)
	if !ok {
		e.t.Fatalf("the harness declares Delete but %T does not implement core.JobDeleter", e.b)
	}
	return jd
}

// requireUnsupported fails unless err wraps core.ErrUnsupported.
func (e *env) requireUnsupported(err error, what string) {
	e.t.Helper()
	if !errors.Is(err, core.ErrUnsupported) {
		e.t.Fatalf("%s of an undeclared capability: %v, want an error wrapping ErrUnsupported", what, err)
	}
}

// runLess orders runs as ListAllRuns must: by job id, then token.
func runLess(a, b core.Run) int {
	if a.JobID != b.JobID {
		if a.JobID < b.JobID {
			return -1
		}
		return 1
	}
	switch {
	case a.Token < b.Token:
		return -1
	case a.Token > b.Token:
		return 1
	}
	return 0
}

// everyRun returns every run of jobs, read with ListRuns and given their
// job's queue and task, in (JobID, Token) order.
func (e *env) everyRun(jobs []core.Job) []core.Run {
	e.t.Helper()
	var out []core.Run
	for _, j := range jobs {
		for _, r := range e.runs(j.ID) {
			r.Queue, r.Task = j.Queue, j.Task
			out = append(out, r)
		}
	}
	slices.SortFunc(out, runLess)
	return out
}

// allJobs lists every job the backend holds, in id order.
func (e *env) allJobs() []core.Job {
	e.t.Helper()
	var out []core.Job
	f := core.JobFilter{Limit: core.MaxPageSize}
	for {
		p := e.list(f)
		out = append(out, p.Jobs...)
		if p.Next == "" {
			return out
		}
		f.Cursor = p.Next
	}
}

func runIDs(rs []core.Run) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func (e *env) putQueueConfig(c core.QueueConfig) {
	e.t.Helper()
	if err := e.b.PutQueueConfig(e.ctx, c); err != nil {
		e.t.Fatalf("PutQueueConfig(%+v): %v", c, err)
	}
}

// pageAll follows a listing from its first page to its last: fetch
// returns the page after cursor and its Next. between, when not nil, runs
// after each page but the last, with the cursor of the next page.
func pageAll[T any](e *env, what string, fetch func(cursor string) ([]T, string), between func(page int, cursor string)) []T {
	e.t.Helper()
	var out []T
	cursor := ""
	for page := 0; ; page++ {
		if page > 10_000 {
			e.t.Fatalf("%s did not reach its last page", what)
		}
		items, next := fetch(cursor)
		out = append(out, items...)
		if next == "" {
			return out
		}
		cursor = next
		if between != nil {
			between(page, cursor)
		}
	}
}
