package admin

import (
	"context"
	"net/http"
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

// activity reads queue's activity over the hour that ends with the
// current minute.
func (h *Handler) activity(ctx context.Context, queue string) (activityView, error) {
	now := core.ClockOrSystem(h.opts.Clock).Now().UTC()
	to := now.Truncate(time.Minute).Add(time.Minute)
	from := to.Add(-activityMinutes * time.Minute)
	v := activityView{Queue: queue, From: from, To: to, Minutes: make([]minuteView, 0, activityMinutes)}
	for t := from; t.Before(to); t = t.Add(time.Minute) {
		end := t.Add(time.Minute)
		done, err := h.st.countSearch(ctx, core.JobSearch{JobFilter: core.JobFilter{Queue: queue}, Finished: core.TimeRange{From: t, To: end}})
		if err != nil {
			return v, err
		}
		runs, err := h.st.countRuns(ctx, core.RunFilter{Queue: queue, Statuses: []core.RunStatus{core.RunFailed}, Since: t, Before: end})
		if err != nil {
			return v, err
		}
		m := minuteView{Start: t, Completed: done[core.StateSucceeded], Failed: done[core.StateFailed]}
		m.Retried = max(runs[core.RunFailed]-m.Failed, 0)
		v.Minutes = append(v.Minutes, m)
	}
	active := []core.JobState{core.StateQueued, core.StateSleeping, core.StateRunning}
	for t := from; !t.After(now); t = t.Add(depthStep) {
		at := t
		if at.Add(depthStep).After(now) {
			at = now
		}
		later, err := h.st.countSearch(ctx, core.JobSearch{JobFilter: core.JobFilter{Queue: queue}, Created: core.TimeRange{To: at}, Finished: core.TimeRange{From: at}})
		if err != nil {
			return v, err
		}
		open, err := h.st.countSearch(ctx, core.JobSearch{JobFilter: core.JobFilter{Queue: queue, States: active}, Created: core.TimeRange{To: at}})
		if err != nil {
			return v, err
		}
		v.Depth = append(v.Depth, depthView{At: at, Jobs: sum(later) + sum(open)})
		if at.Equal(now) {
			break
		}
	}
	return v, nil
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
