package admin

import (
	"net/http"

	"github.com/boson-go/boson/core"
)

func queueName(p params) (string, error) {
	q := p.get("queue")
	return q, core.ValidateName("queue", q)
}

func (h *Handler) apiListQueues(w http.ResponseWriter, r *http.Request, _ params) {
	qs, err := h.st.listQueues(r.Context())
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	out := make([]queueView, 0, len(qs))
	for _, q := range qs {
		v := toQueueConfigView(core.QueueConfig{Queue: q.Queue, Paused: q.Paused}, q.Jobs)
		v.Declared = q.Declared
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"queues": out})
}

// queueInfo returns a queue's stored config and its counts by state.
func (h *Handler) queueInfo(r *http.Request, queue string) (queueView, error) {
	b, err := h.st.forQueue(queue)
	if err != nil {
		return queueView{}, err
	}
	cfg, err := b.GetQueueConfig(r.Context(), queue)
	if err != nil {
		return queueView{}, err
	}
	counts, err := h.st.countJobs(r.Context(), core.JobFilter{Queue: queue})
	if err != nil {
		return queueView{}, err
	}
	cfg.Queue = queue
	v := toQueueConfigView(cfg, counts)
	if v.Declared, err = queueDeclared(r, b, queue); err != nil {
		return queueView{}, err
	}
	return v, nil
}

func (h *Handler) apiGetQueue(w http.ResponseWriter, r *http.Request, p params) {
	q, err := queueName(p)
	var v queueView
	if err == nil {
		v, err = h.queueInfo(r, q)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (h *Handler) apiPause(w http.ResponseWriter, r *http.Request, p params) {
	h.apiSetPaused(w, r, p, true)
}
func (h *Handler) apiResume(w http.ResponseWriter, r *http.Request, p params) {
	h.apiSetPaused(w, r, p, false)
}

func (h *Handler) setPaused(r *http.Request, queue string, paused bool) error {
	_, err := h.st.setPaused(r.Context(), queue, paused)
	if err == nil {
		h.log.InfoContext(r.Context(), "admin: queue paused state changed", "queue", queue, "paused", paused)
	}
	return err
}

func (h *Handler) apiSetPaused(w http.ResponseWriter, r *http.Request, p params, paused bool) {
	q, err := queueName(p)
	if err == nil {
		err = h.setPaused(r, q, paused)
	}
	var v queueView
	if err == nil {
		v, err = h.queueInfo(r, q)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
