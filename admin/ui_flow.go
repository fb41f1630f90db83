package admin

import (
	"errors"
	"net/http"

	"github.com/boson-go/boson/core"
)

// taskPageKeys is how many of the busiest limit keys the task page shows.
const taskPageKeys = 20

// taskData is what a task's page shows: its stats and config, and, where
// the store enforces flow control, its running jobs against the limits
// and its busiest limit keys.
type taskData struct {
	Task taskView
	// Flow is nil when the store lacks core.FlowController.
	Flow *taskFlowView
	// FlowMissing explains why Flow is nil.
	FlowMissing string
}

func (h *Handler) uiTask(w http.ResponseWriter, r *http.Request, p params) {
	t, err := taskName(p)
	var d taskData
	if err == nil {
		d.Task, err = h.taskInfo(r, t)
	}
	if err == nil {
		var f taskFlowView
		f, err = h.taskFlow(r.Context(), t, taskPageKeys)
		switch {
		case err == nil:
			d.Flow = &f
		case errors.Is(err, core.ErrUnsupported):
			d.FlowMissing, err = err.Error(), nil
		}
	}
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "task", h.newView(r, d))
}
