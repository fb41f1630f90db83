package admin

import (
	"context"
	"net/http"
	"strconv"

	"github.com/boson-go/boson/core"
)

// queueFlowView is a queue's running jobs against its limit.
type queueFlowView struct {
	Queue      string `json:"queue"`
	Running    int64  `json:"running"`
	MaxRunning int    `json:"max_running"`
	AtLimit    bool   `json:"at_limit"`
}

func (h *Handler) queueFlow(ctx context.Context, queue string) (queueFlowView, error) {
	bs, err := h.st.backendsFor(queue)
	if err != nil {
		return queueFlowView{}, err
	}
	if _, err := flowControllers(bs, "running jobs against limits"); err != nil {
		return queueFlowView{}, err
	}
	cfg, err := bs[0].GetQueueConfig(ctx, queue)
	if err != nil {
		return queueFlowView{}, err
	}
	v := queueFlowView{Queue: queue, MaxRunning: cfg.MaxRunning}
	if v.Running, err = h.st.running(ctx, core.JobFilter{Queue: queue}); err != nil {
		return queueFlowView{}, err
	}
	v.AtLimit = atLimit(v.Running, v.MaxRunning)
	return v, nil
}

// limitParam reads the optional limit of the busiest keys.
func limitParam(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > core.MaxPageSize {
		return 0, invalidf("limit", "%q must be a whole number in [1, %d]", shorten(v, 16), core.MaxPageSize)
	}
	return n, nil
}

func (h *Handler) apiTaskFlow(w http.ResponseWriter, r *http.Request, p params) {
	t, err := taskName(p)
	if err == nil {
		err = onlyParams(r, "limit")
	}
	var n int
	if err == nil {
		n, err = limitParam(r)
	}
	var v taskFlowView
	if err == nil {
		v, err = h.taskFlow(r.Context(), t, n)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (h *Handler) apiQueueFlow(w http.ResponseWriter, r *http.Request, p params) {
	q, err := queueName(p)
	if err == nil {
		err = onlyParams(r)
	}
	var v queueFlowView
	if err == nil {
		v, err = h.queueFlow(r.Context(), q)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
