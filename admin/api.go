package admin

import (
	"errors"
	"net/http"

	"github.com/boson-go/boson/core"
)

// apiPrefix is where the JSON API lives inside the handler.
const apiPrefix = "/api/v1"

func (h *Handler) apiRoutes() []route {
	api := func(method, pattern string, perm Permission, f func(http.ResponseWriter, *http.Request, params)) route {
		return route{method: method, pattern: apiPrefix + pattern, perm: perm, api: true, serve: f}
	}
	return append(h.opsAPIRoutes(api),
		api("GET", "/openapi.json", PermNone, h.apiOpenAPI),
		api("GET", "/jobs", PermRead, h.apiListJobs),
		api("POST", "/jobs", PermAdmin, h.apiEnqueue),
		api("GET", "/jobs/{id}", PermRead, h.apiGetJob),
		api("POST", "/jobs/{id}/cancel", PermAdmin, h.apiCancel),
		api("POST", "/jobs/{id}/retry", PermAdmin, h.apiRetry),
		api("GET", "/jobs/{id}/runs", PermRead, h.apiRuns),
		api("GET", "/jobs/{id}/checkpoints", PermRead, h.apiCheckpoints),
		api("GET", "/jobs/{id}/wait", PermRead, h.apiJobWait),
		api("GET", "/tasks", PermRead, h.apiListTasks),
		api("GET", "/tasks/{task}", PermRead, h.apiGetTask),
		api("GET", "/tasks/{task}/config", PermRead, h.apiGetTaskConfig),
		api("PUT", "/tasks/{task}/config", PermAdmin, h.apiPutTaskConfig),
		api("GET", "/queues", PermRead, h.apiListQueues),
		api("GET", "/queues/{queue}", PermRead, h.apiGetQueue),
		api("PUT", "/queues/{queue}", PermAdmin, h.apiCreateQueue),
		api("POST", "/queues/{queue}/pause", PermAdmin, h.apiPause),
		api("POST", "/queues/{queue}/resume", PermAdmin, h.apiResume),
		api("GET", "/queues/{queue}/config", PermRead, h.apiGetQueueConfig),
		api("PUT", "/queues/{queue}/config", PermAdmin, h.apiPutQueueConfig),
		api("GET", "/queues/{queue}/flow", PermRead, h.apiQueueFlow),
		api("GET", "/tasks/{task}/flow", PermRead, h.apiTaskFlow),
	)
}

func (h *Handler) apiOpenAPI(w http.ResponseWriter, _ *http.Request, _ params) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(openAPIDocument)
}

func (h *Handler) apiListJobs(w http.ResponseWriter, r *http.Request, _ params) {
	f, err := parseFilter(r.URL.Query())
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	page, err := h.st.jobPage(r.Context(), f)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	out := jobPageView{Jobs: make([]jobView, 0, len(page.Jobs)), Next: page.Next}
	for _, j := range page.Jobs {
		out.Jobs = append(out.Jobs, toJobView(j))
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) apiEnqueue(w http.ResponseWriter, r *http.Request, _ params) {
	body, err := readBody(r)
	if err == nil {
		err = requireJSON(r, body)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	res, err := h.enqueue(r, body)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	status := http.StatusCreated
	if res.Reused {
		status = http.StatusOK
	}
	writeJSON(w, status, enqueueView{Job: toJobView(res.Job), Reused: res.Reused})
}

// enqueue parses body and stores one job on the backend of its queue.
func (h *Handler) enqueue(r *http.Request, body []byte) (core.EnqueueResult, error) {
	req, err := parseEnqueue(body, core.ClockOrSystem(h.opts.Clock).Now(), "admin", h.opts.Limits)
	if err != nil {
		return core.EnqueueResult{}, err
	}
	b, err := h.st.forQueue(req.Queue)
	if err == nil {
		err = checkFlowRequest(b, req)
	}
	if err != nil {
		return core.EnqueueResult{}, err
	}
	res, err := b.Enqueue(r.Context(), []core.EnqueueRequest{req})
	if err != nil {
		var be *core.BatchError
		if errors.As(err, &be) {
			err = be.Err
		}
		return core.EnqueueResult{}, err
	}
	if len(res) != 1 {
		return core.EnqueueResult{}, errors.New("admin: backend returned no enqueue result")
	}
	h.log.InfoContext(r.Context(), "admin: job enqueued", "job", res[0].Job.ID, "task", req.Task, "queue", res[0].Job.Queue, "reused", res[0].Reused)
	return res[0], nil
}

// jobID validates the {id} path parameter.
func jobID(p params) (string, error) {
	id := p.get("id")
	if err := core.ValidateName("job id", id); err != nil {
		return "", err
	}
	return id, nil
}

func (h *Handler) apiGetJob(w http.ResponseWriter, r *http.Request, p params) {
	id, err := jobID(p)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	_, j, err := h.st.findJob(r.Context(), id)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toJobView(j))
}

// cancelJob cancels job id on the backend that holds it.
func (h *Handler) cancelJob(r *http.Request, id, reason string) (core.Job, error) {
	b, _, err := h.st.findJob(r.Context(), id)
	if err != nil {
		return core.Job{}, err
	}
	if reason == "" {
		reason = "cancelled by an operator"
	}
	j, err := b.Cancel(r.Context(), id, reason)
	if err == nil {
		h.log.InfoContext(r.Context(), "admin: job cancelled", "job", id, "reason", reason)
	}
	return j, err
}

// retryJob retries job id on the backend that holds it.
func (h *Handler) retryJob(r *http.Request, id string) (core.Job, error) {
	b, _, err := h.st.findJob(r.Context(), id)
	if err != nil {
		return core.Job{}, err
	}
	j, err := b.Retry(r.Context(), id)
	if err == nil {
		h.log.InfoContext(r.Context(), "admin: job retried", "job", id)
	}
	return j, err
}

func (h *Handler) apiCancel(w http.ResponseWriter, r *http.Request, p params) {
	id, err := jobID(p)
	var body []byte
	if err == nil {
		body, err = readBody(r)
	}
	if err == nil {
		err = requireJSON(r, body)
	}
	var reason string
	if err == nil {
		reason, err = parseCancel(body)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	j, err := h.cancelJob(r, id, reason)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toJobView(j))
}

func (h *Handler) apiRetry(w http.ResponseWriter, r *http.Request, p params) {
	id, err := jobID(p)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	j, err := h.retryJob(r, id)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toJobView(j))
}

func (h *Handler) apiRuns(w http.ResponseWriter, r *http.Request, p params) {
	id, err := jobID(p)
	var b core.QueueBackend
	if err == nil {
		b, _, err = h.st.findJob(r.Context(), id)
	}
	var runs []core.Run
	if err == nil {
		runs, err = b.ListRuns(r.Context(), id)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	out := make([]runView, 0, len(runs))
	for _, run := range runs {
		out = append(out, toRunView(run))
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": out})
}

func (h *Handler) apiCheckpoints(w http.ResponseWriter, r *http.Request, p params) {
	id, err := jobID(p)
	var b core.QueueBackend
	if err == nil {
		b, _, err = h.st.findJob(r.Context(), id)
	}
	var cps []core.Checkpoint
	if err == nil {
		cps, err = b.Checkpoints(r.Context(), id)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	out := make([]checkpointView, 0, len(cps))
	for _, c := range cps {
		out = append(out, toCheckpointView(c))
	}
	writeJSON(w, http.StatusOK, map[string]any{"checkpoints": out})
}
