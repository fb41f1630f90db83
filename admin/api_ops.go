package admin

import (
	"net/http"
	"time"

	"github.com/boson-go/boson/core"
)

func (h *Handler) opsAPIRoutes(api func(method, pattern string, perm Permission, f func(http.ResponseWriter, *http.Request, params)) route) []route {
	return []route{
		api("DELETE", "/jobs/{id}", PermAdmin, h.apiDeleteJob),
		api("GET", "/counts/jobs", PermRead, h.apiCountJobs),
		api("GET", "/counts/runs", PermRead, h.apiCountRuns),
		api("GET", "/runs", PermRead, h.apiListRuns),
		api("GET", "/runs/{id}", PermRead, h.apiGetRun),
		api("POST", "/bulk/{action}/preview", PermAdmin, h.apiBulkPreview),
		api("POST", "/bulk/{action}", PermAdmin, h.apiBulk),
		api("DELETE", "/queues/{queue}", PermAdmin, h.apiDeleteQueue),
		api("GET", "/queues/{queue}/activity", PermRead, h.apiActivity),
	}
}

// onlyParams refuses query parameters other than those named.
func onlyParams(r *http.Request, names ...string) error {
	for k, vs := range r.URL.Query() {
		ok := false
		for _, n := range names {
			ok = ok || k == n
		}
		if !ok {
			return invalidf(k, "is not a known parameter here")
		}
		if len(vs) > 1 {
			return invalidf(k, "is given %d times", len(vs))
		}
	}
	return nil
}

func (h *Handler) apiDeleteJob(w http.ResponseWriter, r *http.Request, p params) {
	id, err := jobID(p)
	if err == nil {
		err = onlyParams(r, "force")
	}
	force := false
	if err == nil {
		force, err = boolParam(r, "force")
	}
	if err == nil {
		err = h.deleteJob(r, id, force)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
}

func (h *Handler) deleteJob(r *http.Request, id string, force bool) error {
	err := h.st.deleteJob(r.Context(), id, force)
	if err == nil {
		h.log.InfoContext(r.Context(), "admin: job deleted", "job", id, "force", force)
	}
	return err
}

func boolParam(r *http.Request, name string) (bool, error) {
	switch v := r.URL.Query().Get(name); v {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	default:
		return false, invalidf(name, "%q must be true or false", shorten(v, 16))
	}
}

// countsView is the answer of a count.
type countsView[K comparable] struct {
	Total  int64       `json:"total"`
	Counts map[K]int64 `json:"counts"`
}

func newCounts[K comparable](m map[K]int64) countsView[K] {
	out := countsView[K]{Counts: map[K]int64{}}
	for k, v := range m {
		if v != 0 {
			out.Counts[k] = v
			out.Total += v
		}
	}
	return out
}

func (h *Handler) apiCountJobs(w http.ResponseWriter, r *http.Request, _ params) {
	q := r.URL.Query()
	for _, k := range []string{"limit", "cursor", "order"} {
		if q.Has(k) {
			h.writeError(w, r, invalidf(k, "does not apply to a count"))
			return
		}
	}
	f, err := parseFilter(q)
	var c map[core.JobState]int64
	if err == nil {
		c, err = h.countJobs(r, f)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newCounts(c))
}

// countJobs counts f: through search when it sets a search field.
func (h *Handler) countJobs(r *http.Request, f core.JobSearch) (map[core.JobState]int64, error) {
	if hasSearch(f) {
		return h.st.countSearch(r.Context(), f)
	}
	return h.st.countJobs(r.Context(), f.JobFilter)
}

func (h *Handler) apiCountRuns(w http.ResponseWriter, r *http.Request, _ params) {
	f, err := parseRunFilter(r.URL.Query(), false)
	var c map[core.RunStatus]int64
	if err == nil {
		c, err = h.st.countRuns(r.Context(), f)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newCounts(c))
}

// runPageView is the answer of a run listing.
type runPageView struct {
	Runs []runView `json:"runs"`
	Next string    `json:"next,omitempty"`
}

func (h *Handler) apiListRuns(w http.ResponseWriter, r *http.Request, _ params) {
	f, err := parseRunFilter(r.URL.Query(), true)
	var page core.RunPage
	if err == nil {
		page, err = h.st.listRuns(r.Context(), f)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	out := runPageView{Runs: make([]runView, 0, len(page.Runs)), Next: page.Next}
	for _, run := range page.Runs {
		out.Runs = append(out.Runs, toRunView(run))
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) apiGetRun(w http.ResponseWriter, r *http.Request, p params) {
	id := p.get("id")
	_, _, err := core.ParseRunID(id)
	var run core.Run
	if err == nil {
		run, err = h.st.getRun(r.Context(), id)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toRunView(run))
}

func (h *Handler) apiBulkPreview(w http.ResponseWriter, r *http.Request, p params) {
	h.apiBulkCall(w, r, p, true)
}

func (h *Handler) apiBulk(w http.ResponseWriter, r *http.Request, p params) {
	h.apiBulkCall(w, r, p, false)
}

func (h *Handler) apiBulkCall(w http.ResponseWriter, r *http.Request, p params, preview bool) {
	action, err := bulkAction(p)
	var body []byte
	if err == nil {
		body, err = readBody(r)
	}
	if err == nil {
		err = requireJSON(r, body)
	}
	var v bulkView
	if err == nil {
		v, err = h.bulk(r, action, body, preview)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// queueDeleteView is the answer of a queue deletion.
type queueDeleteView struct {
	Queue   string `json:"queue"`
	Deleted int64  `json:"deleted"`
	Done    bool   `json:"done"`
}

func (h *Handler) apiDeleteQueue(w http.ResponseWriter, r *http.Request, p params) {
	q, err := queueName(p)
	if err == nil {
		err = onlyParams(r, "confirm")
	}
	if err == nil && r.URL.Query().Get("confirm") != q {
		err = invalidf("confirm", "must repeat the queue's name to delete it with all its jobs")
	}
	var v queueDeleteView
	if err == nil {
		v, err = h.deleteQueue(r, q)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// deleteQueue runs steps of deleting queue until it is done or the budget
// is spent (after one step at least); the caller repeats the request while
// Done is false.
func (h *Handler) deleteQueue(r *http.Request, queue string) (queueDeleteView, error) {
	v := queueDeleteView{Queue: queue}
	deadline := time.Now().Add(bulkBudget)
	for first := true; !v.Done && (first || time.Now().Before(deadline)); first = false {
		res, err := h.st.deleteQueueStep(r.Context(), core.DeleteQueueRequest{Queue: queue, Limit: DefaultBulkStep})
		v.Deleted += int64(res.Deleted)
		v.Done = res.Done
		if err != nil {
			return v, err
		}
	}
	h.log.InfoContext(r.Context(), "admin: queue deleted", "queue", queue, "jobs", v.Deleted, "done", v.Done)
	return v, nil
}
