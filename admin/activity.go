package admin

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
)

// The activity of a queue is computed from the store's own timestamps on
// every request (job finish times, run start times, job creation times),
// never from the admin process's memory, so every replica of the admin
// server draws the same chart.

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
	// Retried counts the attempts started within the minute that failed
	// and were queued again: failed runs less the jobs that failed for good.
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
// current minute: two counts a minute and two a depth sample, run
// activityWorkers at a time.
func (h *Handler) activity(ctx context.Context, queue string) (activityView, error) {
	now := core.ClockOrSystem(h.opts.Clock).Now().UTC()
	to := now.Truncate(time.Minute).Add(time.Minute)
	from := to.Add(-activityMinutes * time.Minute)
	v := activityView{Queue: queue, From: from, To: to, Minutes: make([]minuteView, activityMinutes)}
	for at := from; at.Before(now); at = at.Add(depthStep) {
		v.Depth = append(v.Depth, depthView{At: at})
	}
	v.Depth = append(v.Depth, depthView{At: now})
	failedRuns := make([]int64, len(v.Minutes))
	open := make([]int64, len(v.Depth))
	active := []core.JobState{core.StateQueued, core.StateSleeping, core.StateRunning}
	var counts []func(context.Context) error
	for i := range v.Minutes {
		m := &v.Minutes[i]
		m.Start = from.Add(time.Duration(i) * time.Minute)
		minute := core.TimeRange{From: m.Start, To: m.Start.Add(time.Minute)}
		counts = append(counts, func(ctx context.Context) error {
			c, err := h.st.countSearch(ctx, core.JobSearch{JobFilter: core.JobFilter{Queue: queue}, Finished: minute})
			m.Completed, m.Failed = c[core.StateSucceeded], c[core.StateFailed]
			return err
		}, func(ctx context.Context) error {
			c, err := h.st.countRuns(ctx, core.RunFilter{Queue: queue, Statuses: []core.RunStatus{core.RunFailed}, Since: minute.From, Before: minute.To})
			failedRuns[i] = c[core.RunFailed]
			return err
		})
	}
	for i := range v.Depth {
		d := &v.Depth[i]
		counts = append(counts, func(ctx context.Context) error {
			c, err := h.st.countSearch(ctx, core.JobSearch{JobFilter: core.JobFilter{Queue: queue}, Created: core.TimeRange{To: d.At}, Finished: core.TimeRange{From: d.At}})
			d.Jobs = sum(c)
			return err
		}, func(ctx context.Context) error {
			c, err := h.st.countSearch(ctx, core.JobSearch{JobFilter: core.JobFilter{Queue: queue, States: active}, Created: core.TimeRange{To: d.At}})
			open[i] = sum(c)
			return err
		})
	}
	if err := runBounded(ctx, activityWorkers, counts); err != nil {
		return v, err
	}
	for i := range v.Minutes {
		v.Minutes[i].Retried = max(failedRuns[i]-v.Minutes[i].Failed, 0)
	}
	for i := range v.Depth {
		v.Depth[i].Jobs += open[i]
	}
	return v, nil
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
