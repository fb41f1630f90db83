package admin

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/boson-go/boson/core"
)

// waitView is the latest fan-in wait a job began ([core.Wait]), with
// Current telling whether the job is still parked on it.
type waitView struct {
	JobID          string     `json:"job_id"`
	JobIDs         []string   `json:"job_ids"`
	Mode           string     `json:"mode"`
	Until          *time.Time `json:"until,omitempty"`
	CancelChildren bool       `json:"cancel_children"`
	Pending        int        `json:"pending"`
	Woken          bool       `json:"woken"`
	Token          int64      `json:"token"`
	// Current is true while the job sleeps under the wait's token: it is
	// parked on the wait, not yet claimed again.
	Current bool `json:"current"`
	// Summary is [core.Wait.Describe]: the wait in one line.
	Summary string `json:"summary"`
}

// waitShown bounds how many awaited jobs the job page links.
const waitShown = 100

// Shown returns the first awaited jobs the job page links, at most
// waitShown of them.
func (v waitView) Shown() []string { return v.JobIDs[:min(len(v.JobIDs), waitShown)] }

func toWaitView(w core.Wait, j core.Job) waitView {
	v := waitView{
		JobID: w.JobID, JobIDs: w.JobIDs, Mode: string(w.Mode), CancelChildren: w.CancelChildren,
		Pending: w.Pending, Woken: w.Woken, Token: w.Token,
		Current: w.Current(j), Summary: w.Describe(j),
	}
	if v.JobIDs == nil {
		v.JobIDs = []string{}
	}
	if !w.Until.IsZero() {
		u := w.Until.UTC()
		v.Until = &u
	}
	return v
}

// jobWait reads the latest wait of job id from the backend that holds it.
// A backend without [core.Awaiter] gives an error wrapping
// [core.ErrUnsupported]; a job that never waited, [core.ErrNotFound].
func (h *Handler) jobWait(ctx context.Context, id string) (waitView, error) {
	b, j, err := h.st.findJob(ctx, id)
	if err != nil {
		return waitView{}, err
	}
	aw, ok := b.(core.Awaiter)
	if !ok {
		return waitView{}, fmt.Errorf("%w: the backend of queue %s does not park jobs on other jobs", core.ErrUnsupported, j.Queue)
	}
	w, err := aw.JobWait(ctx, id)
	if err != nil {
		return waitView{}, err
	}
	return toWaitView(w, j), nil
}

func (h *Handler) apiJobWait(w http.ResponseWriter, r *http.Request, p params) {
	id, err := jobID(p)
	if err == nil {
		err = onlyParams(r)
	}
	var v waitView
	if err == nil {
		v, err = h.jobWait(r.Context(), id)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
