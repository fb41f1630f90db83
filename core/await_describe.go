package core

import (
	"fmt"
	"time"
)

// Current reports whether j, the waiting job as read now, is still parked
// on w: sleeping under the token of the run that began the wait.
func (w Wait) Current(j Job) bool {
	return j.ID == w.JobID && j.State == StateSleeping && j.Lease.Token == w.Token
}

// Describe says in one line where w stands for j, the waiting job as read
// now: "waiting on 3 of 5 jobs (all)" while j is parked on it, "woken: ..."
// once it is satisfied and j is due, and what it came to once j left it;
// then its bound and its cancel-children option when set.
func (w Wait) Describe(j Job) string {
	var s string
	switch {
	case w.Current(j) && !w.Woken:
		s = fmt.Sprintf("waiting on %d of %d jobs (%s)", w.Pending, len(w.JobIDs), w.Mode)
	case w.Current(j):
		s = fmt.Sprintf("woken: %d of %d jobs ended (%s), due to run", len(w.JobIDs)-w.Pending, len(w.JobIDs), w.Mode)
	default:
		s = fmt.Sprintf("last waited on %d jobs (%s); %d had not ended when the wait was left", len(w.JobIDs), w.Mode, w.Pending)
	}
	if !w.Until.IsZero() {
		s += ", until " + w.Until.UTC().Format(time.RFC3339)
	}
	if w.CancelChildren {
		s += "; cancelling the job cancels them"
	}
	return s
}
