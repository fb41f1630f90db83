package admin

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
)

// The activity of a queue is computed from the store's own timestamps on
// every request (job creation and finish times, run start times), never
// from the admin process's memory, so every replica of the admin server
// draws the same chart. Each count reads only the hour's jobs: the
// depth at an instant is derived from the active jobs now and the jobs
// created and finished since, rather than counted over every retained
// job.

const (
	// activityMinutes is the window of the activity chart.
	activityMinutes = 60
	// depthStep is the spacing of the queue depth samples.
	depthStep = 5 * time.Minute
)

// minuteView is one minute of a queue's activity.
type minuteView struct {
	Start time.Time `json:"start"`
	// Completed and Failed count jobs that succeeded, or failed for good,
	// within the minute (by finish time).
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
	// Retried counts the runs started within the minute that ended failed
	// or lost (their lease expired) and were followed by another attempt:
	// their job has a later attempt, or is queued for one.
	Retried int64 `json:"retried"`
}

// depthView is the queue's depth at one instant: jobs created before it
// that had not finished by then (queued, sleeping or running).
type depthView struct {
	At   time.Time `json:"at"`
	Jobs int64     `json:"jobs"`
}

// activityView is a queue's activity over the last hour.
type activityView struct {
	Queue   string       `json:"queue"`
	From    time.Time    `json:"from"`
	To      time.Time    `json:"to"`
	Minutes []minuteView `json:"minutes"`
	Depth   []depthView  `json:"depth"`
}

// activityWorkers bounds the counts one activity request runs at once.
const activityWorkers = 8

// activity reads queue's activity over the hour that ends with the
// current minute: a count of finished jobs a minute, a count of created
// jobs a depth interval and one of the active jobs, run activityWorkers
// at a time, and a walk of the hour's failed and lost runs.
//
// The depth at t is the active jobs now, plus those finished since t,
// less those created since t: a retained job created before t and still
// open at t is either active now or finished since t, and a job created
// since t is active now or finished since t, so the terms cancel
// exactly.
func (h *Handler) activity(ctx context.Context, queue string) (activityView, error) {
	now := core.ClockOrSystem(h.opts.Clock).Now().UTC()
	to := now.Truncate(time.Minute).Add(time.Minute)
	from := to.Add(-activityMinutes * time.Minute)
	v := activityView{Queue: queue, From: from, To: to, Minutes: make([]minuteView, activityMinutes)}
	for at := from; at.Before(now); at = at.Add(depthStep) {
		v.Depth = append(v.Depth, depthView{At: at})
	}
	v.Depth = append(v.Depth, depthView{At: now})
	finished := make([]int64, activityMinutes)
	// created[i] counts the jobs created from Depth[i].At to the next
	// sample (the last interval is open, so that no job escapes it).
	created := make([]int64, len(v.Depth)-1)
	var active int64
	counts := []func(context.Context) error{func(ctx context.Context) error {
		c, err := h.st.countSearch(ctx, core.JobSearch{JobFilter: core.JobFilter{Queue: queue,
			States: []core.JobState{core.StateQueued, core.StateSleeping, core.StateRunning}}})
		active = sum(c)
		return err
	}, func(ctx context.Context) error {
		return h.retriedRuns(ctx, queue, from, to, v.Minutes)
	}}
	for i := range v.Minutes {
		m := &v.Minutes[i]
		m.Start = from.Add(time.Duration(i) * time.Minute)
		minute := core.TimeRange{From: m.Start, To: m.Start.Add(time.Minute)}
		counts = append(counts, func(ctx context.Context) error {
			c, err := h.st.countSearch(ctx, core.JobSearch{JobFilter: core.JobFilter{Queue: queue}, Finished: minute})
			m.Completed, m.Failed = c[core.StateSucceeded], c[core.StateFailed]
			finished[i] = sum(c)
			return err
		})
	}
	for i := range created {
		span := core.TimeRange{From: v.Depth[i].At}
		if i+1 < len(created) {
			span.To = v.Depth[i+1].At
		}
		counts = append(counts, func(ctx context.Context) error {
			c, err := h.st.countSearch(ctx, core.JobSearch{JobFilter: core.JobFilter{Queue: queue}, Created: span})
			created[i] = sum(c)
			return err
		})
	}
	if err := runBounded(ctx, activityWorkers, counts); err != nil {
		return v, err
	}
	var finishedSince, createdSince int64
	minute := len(finished)
	for i := len(v.Depth) - 1; i >= 0; i-- {
		d := &v.Depth[i]
		for minute > 0 && !v.Minutes[minute-1].Start.Before(d.At) {
			minute--
			finishedSince += finished[minute]
		}
		if i < len(created) {
			createdSince += created[i]
		}
		// Jobs that change between the counts (which are not one snapshot)
		// could make the sum negative for a moment.
		d.Jobs = max(active+finishedSince-createdSince, 0)
	}
	return v, nil
}

// retriedRuns adds to each of minutes (which start at from, a minute
// apart) the runs of queue started within it that ended failed or lost
// and were followed by another attempt: it walks the failed and lost runs
// started in [from, to) a page at a time and reads their jobs by id. A
// run whose job was deleted since is not counted.
func (h *Handler) retriedRuns(ctx context.Context, queue string, from, to time.Time, minutes []minuteView) error {
	f := core.RunFilter{Queue: queue, Statuses: []core.RunStatus{core.RunFailed, core.RunLost}, Since: from, Before: to, Limit: core.MaxPageSize}
	for {
		page, err := h.st.listRuns(ctx, f)
		if err != nil || len(page.Runs) == 0 {
			return err
		}
		var ids []string
		for _, r := range page.Runs {
			if len(ids) == 0 || ids[len(ids)-1] != r.JobID { // runs come by job id
				ids = append(ids, r.JobID)
			}
		}
		found, _, err := h.st.searchJobs(ctx, core.JobSearch{JobFilter: core.JobFilter{Queue: queue, Limit: core.MaxPageSize}, IDs: slices.Compact(slices.Sorted(slices.Values(ids)))})
		if err != nil {
			return err
		}
		jobs := make(map[string]core.Job, len(found))
		for _, j := range found {
			jobs[j.ID] = j.Job
		}
		for _, r := range page.Runs {
			j, ok := jobs[r.JobID]
			if !ok || !(j.Attempt > r.Attempt || j.Attempt == r.Attempt && j.State == core.StateQueued) {
				continue
			}
			if i := int(r.StartedAt.Sub(from) / time.Minute); i >= 0 && i < len(minutes) {
				minutes[i].Retried++
			}
		}
		if page.Next == "" {
			return nil
		}
		f.Cursor = page.Next
	}
}

// runBounded runs fs with at most n at once and returns the first error;
// after an error the rest are not started.
func runBounded(ctx context.Context, n int, fs []func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for _, f := range fs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(ctx); err != nil {
				cancel(err)
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}

func sum[K comparable](m map[K]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func (h *Handler) apiActivity(w http.ResponseWriter, r *http.Request, p params) {
	q, err := queueName(p)
	if err == nil {
		err = onlyParams(r)
	}
	var v activityView
	if err == nil {
		v, err = h.activity(r.Context(), q)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
