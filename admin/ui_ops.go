package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/boson-go/boson/core"
)

func (h *Handler) opsUIRoutes(ui func(method, pattern string, perm Permission, f func(http.ResponseWriter, *http.Request, params)) route) []route {
	return []route{
		ui("GET", "/queues/{queue}", PermRead, h.uiQueue),
		ui("GET", "/queues/{queue}/activity.svg", PermRead, h.uiActivitySVG),
		ui("POST", "/queues/{queue}/delete", PermAdmin, h.uiDeleteQueue),
		ui("GET", "/live/counts", PermRead, h.uiLiveCounts),
		ui("GET", "/enqueue", PermRead, h.uiEnqueueForm),
		ui("POST", "/enqueue", PermAdmin, h.uiEnqueue),
		ui("GET", "/failed", PermRead, h.uiFailed),
		ui("POST", "/failed/retry", PermAdmin, h.uiFailedRetry),
		ui("POST", "/bulk/{action}", PermAdmin, h.uiBulk),
		ui("GET", "/runs", PermRead, h.uiRuns),
		ui("POST", "/jobs/{id}/delete", PermAdmin, h.uiDeleteJob),
	}
}

// dropEmpty removes the empty fields of a filter form, which mean "any".
func dropEmpty(q url.Values) url.Values {
	for k, vs := range q {
		if len(vs) == 1 && vs[0] == "" {
			q.Del(k)
		}
	}
	return q
}

// queueData is what a queue's page shows. The chart is an image of its
// own (activity.svg), so that the page does not wait for its counts.
type queueData struct {
	Queue queueView
	// Chart reports whether the store can count by time range.
	Chart bool
}

func (h *Handler) uiQueue(w http.ResponseWriter, r *http.Request, p params) {
	q, err := queueName(p)
	var d queueData
	if err == nil {
		d.Queue, err = h.queueInfo(r, q)
	}
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	_, errS := capable[core.JobSearcher](h.st.all(), "job search")
	_, errR := capable[core.RunReader](h.st.all(), "run reading")
	d.Chart = errS == nil && errR == nil
	h.render(w, r, http.StatusOK, "queue", h.newView(r, d))
}

// uiActivitySVG draws a queue's activity as a standalone SVG image.
func (h *Handler) uiActivitySVG(w http.ResponseWriter, r *http.Request, p params) {
	q, err := queueName(p)
	var a activityView
	if err == nil {
		a, err = h.activity(r.Context(), q)
	}
	if err != nil {
		status, _, public := classify(err)
		if !public {
			h.log.ErrorContext(r.Context(), "admin: activity chart", "queue", q, "err", err)
		}
		http.Error(w, http.StatusText(status), status)
		return
	}
	var buf bytes.Buffer
	if err := h.pages.chart.Execute(&buf, newChart(a)); err != nil {
		h.log.ErrorContext(r.Context(), "admin: render chart", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "image/svg+xml")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	_, _ = w.Write(buf.Bytes())
}

func (h *Handler) uiDeleteQueue(w http.ResponseWriter, r *http.Request, p params) {
	q, err := queueName(p)
	if err == nil {
		err = h.checkForm(r)
	}
	if err == nil && r.PostForm.Get("confirm") != q {
		err = invalidf("confirm", "type the queue's name to delete it with all its jobs")
	}
	var v queueDeleteView
	if err == nil {
		v, err = h.deleteQueue(r, q)
	}
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	if !v.Done {
		seeOther(w, "../"+url.PathEscape(q))
		return
	}
	seeOther(w, "../../")
}

// liveCounts is the answer of /live/counts: each queue's jobs by state
// (every state present) and their total.
type liveCounts struct {
	Queues map[string]map[string]int64 `json:"queues"`
}

func (h *Handler) uiLiveCounts(w http.ResponseWriter, r *http.Request, _ params) {
	if err := onlyParams(r, "queue"); err != nil {
		h.writeError(w, r, err)
		return
	}
	var qs []core.QueueInfo
	var err error
	if q := r.URL.Query().Get("queue"); q != "" {
		err = core.ValidateName("queue", q)
		var c map[core.JobState]int64
		if err == nil {
			c, err = h.st.countJobs(r.Context(), core.JobFilter{Queue: q})
		}
		qs = []core.QueueInfo{{Queue: q, Jobs: c}}
	} else {
		qs, err = h.st.listQueues(r.Context())
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	out := liveCounts{Queues: map[string]map[string]int64{}}
	for _, q := range qs {
		m := map[string]int64{}
		var total int64
		for _, s := range core.AllStates {
			m[string(s)] = q.Jobs[s]
			total += q.Jobs[s]
		}
		m["total"] = total
		out.Queues[q.Queue] = m
	}
	writeJSON(w, http.StatusOK, out)
}

// enqueueForm holds the fields of the enqueue form as typed.
type enqueueForm struct {
	Task, Queue, Payload, Headers, Priority, Delay, MaxAttempts, Key string
	// LimitKey and SequenceKey are the job's flow keys.
	LimitKey, SequenceKey string
}

type enqueueData struct {
	Form    enqueueForm
	Message string
}

func (h *Handler) uiEnqueueForm(w http.ResponseWriter, r *http.Request, _ params) {
	q := r.URL.Query()
	d := enqueueData{Form: enqueueForm{Task: q.Get("task"), Queue: q.Get("queue"), Payload: "{}"}}
	h.render(w, r, http.StatusOK, "enqueue", h.newView(r, d))
}

func (h *Handler) uiEnqueue(w http.ResponseWriter, r *http.Request, _ params) {
	if err := h.checkForm(r); err != nil {
		h.renderError(w, r, err)
		return
	}
	f := r.PostForm
	form := enqueueForm{Task: f.Get("task"), Queue: f.Get("queue"), Payload: f.Get("payload"), Headers: f.Get("headers"),
		Priority: f.Get("priority"), Delay: f.Get("delay"), MaxAttempts: f.Get("max_attempts"), Key: f.Get("idempotency_key"),
		LimitKey: f.Get("limit_key"), SequenceKey: f.Get("sequence_key")}
	body, err := form.body()
	var res core.EnqueueResult
	if err == nil {
		res, err = h.enqueue(r, body)
	}
	if err != nil {
		status, _, public := classify(err)
		msg := err.Error()
		if !public {
			h.log.ErrorContext(r.Context(), "admin: enqueue from the form", "err", err)
			msg = "internal error"
		}
		h.render(w, r, status, "enqueue", h.newView(r, enqueueData{Form: form, Message: msg}))
		return
	}
	seeOther(w, "jobs/"+url.PathEscape(res.Job.ID))
}

// body turns the form into the API's enqueue body, so that both go
// through one parser. Bad JSON or numbers are refused with what is wrong.
func (f enqueueForm) body() ([]byte, error) {
	b := map[string]any{"task": strings.TrimSpace(f.Task)}
	if q := strings.TrimSpace(f.Queue); q != "" {
		b["queue"] = q
	}
	if p := strings.TrimSpace(f.Payload); p != "" {
		var v json.RawMessage
		if err := json.Unmarshal([]byte(p), &v); err != nil {
			return nil, invalidf("payload", "is not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
		}
		b["payload"] = v
	}
	if strings.TrimSpace(f.Headers) != "" {
		hs := map[string]string{}
		for i, line := range strings.Split(f.Headers, "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			k, v, ok := strings.Cut(line, "=")
			if !ok || strings.TrimSpace(k) == "" {
				return nil, invalidf("headers", "line %d is not key=value", i+1)
			}
			hs[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
		b["headers"] = hs
	}
	for _, n := range []struct {
		name, v string
	}{{"priority", f.Priority}, {"max_attempts", f.MaxAttempts}} {
		if v := strings.TrimSpace(n.v); v != "" {
			i, err := strconv.Atoi(v)
			if err != nil {
				return nil, invalidf(n.name, "%q is not a whole number", shorten(v, 32))
			}
			b[n.name] = i
		}
	}
	if v := strings.TrimSpace(f.Delay); v != "" {
		b["delay"] = v
	}
	if v := strings.TrimSpace(f.Key); v != "" {
		b["idempotency_key"] = v
	}
	if v := strings.TrimSpace(f.LimitKey); v != "" {
		b["limit_key"] = v
	}
	if v := strings.TrimSpace(f.SequenceKey); v != "" {
		b["sequence_key"] = v
	}
	return json.Marshal(b)
}

// failedGroup is the failed jobs that share one error text.
type failedGroup struct {
	Error  string
	Count  int
	Newest time.Time
	IDs    []string
	Queues []string
	Tasks  []string
}

type failedData struct {
	Queue, Task string
	Groups      []failedGroup
	// Scanned is the number of newest failed jobs grouped; Truncated says
	// there were more.
	Scanned   int
	Truncated bool
	Retried   string
}

// failedScan is how many of the newest failed jobs the view groups: the
// most one bulk request may name by id.
const failedScan = core.MaxPageSize

func (h *Handler) uiFailed(w http.ResponseWriter, r *http.Request, _ params) {
	q := dropEmpty(r.URL.Query())
	d := failedData{Queue: q.Get("queue"), Task: q.Get("task"), Retried: q.Get("retried")}
	q.Del("retried")
	f := core.JobFilter{Queue: d.Queue, Task: d.Task, States: []core.JobState{core.StateFailed}, Desc: true, Limit: failedScan}
	err := onlyParamsIn(q, "queue", "task")
	if err == nil {
		err = core.ValidateJobFilter(f)
	}
	var page core.JobPage
	if err == nil {
		page, err = h.st.listJobs(r.Context(), f)
	}
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	d.Scanned, d.Truncated = len(page.Jobs), page.Next != ""
	d.Groups = groupFailed(page.Jobs)
	h.render(w, r, http.StatusOK, "failed", h.newView(r, d))
}

func onlyParamsIn(q url.Values, names ...string) error {
	r := &http.Request{URL: &url.URL{RawQuery: q.Encode()}}
	return onlyParams(r, names...)
}

// groupFailed groups jobs (newest first) by error text, largest group
// first, then newest.
func groupFailed(jobs []core.Job) []failedGroup {
	byErr := map[string]*failedGroup{}
	var order []*failedGroup
	for _, j := range jobs {
		g, ok := byErr[j.LastError]
		if !ok {
			g = &failedGroup{Error: j.LastError, Newest: j.FinishedAt}
			byErr[j.LastError] = g
			order = append(order, g)
		}
		g.Count++
		g.IDs = append(g.IDs, j.ID)
		if !contains(g.Queues, j.Queue) {
			g.Queues = append(g.Queues, j.Queue)
		}
		if !contains(g.Tasks, j.Task) {
			g.Tasks = append(g.Tasks, j.Task)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return order[a].Count > order[b].Count })
	out := make([]failedGroup, len(order))
	for i, g := range order {
		out[i] = *g
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// confirmData is the confirmation page of a bulk retry from the failed view.
type confirmData struct {
	Count int64
	IDs   []string
	Error string
}

func (h *Handler) uiFailedRetry(w http.ResponseWriter, r *http.Request, _ params) {
	err := h.checkForm(r)
	var ids []string
	if err == nil {
		ids, err = parseIDs(r.PostForm["id"])
	}
	if err == nil && len(ids) == 0 {
		err = invalidf("id", "no job was chosen")
	}
	req := core.BulkRequest{Action: core.BulkRetry, Limit: DefaultBulkStep,
		Search: core.JobSearch{JobFilter: core.JobFilter{States: []core.JobState{core.StateFailed}}, IDs: ids}}
	if err == nil {
		err = core.ValidateBulk(req)
	}
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	if res, confirmed, err := h.formConfirm(r, req, false); err != nil || confirmed {
		if err != nil {
			h.renderError(w, r, err)
			return
		}
		seeOther(w, "../failed?retried="+strconv.Itoa(res.Changed))
		return
	}
	pv, err := h.bulkPreview(r, req)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	d := confirmData{Count: pv.Matched, IDs: ids, Error: r.PostForm.Get("error")}
	h.render(w, r, http.StatusOK, "confirm", h.newView(r, d))
}

// runsData is what the runs page shows.
type runsData struct {
	Filter   core.RunFilter
	Status   string
	Runs     []core.Run
	NextURL  string
	FirstURL string
	Note     string
}

func (h *Handler) uiRuns(w http.ResponseWriter, r *http.Request, _ params) {
	q := dropEmpty(r.URL.Query())
	if q.Get("order") == "" {
		q.Set("order", "desc")
	}
	f, err := parseRunFilter(q, true)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	d := runsData{Filter: f, Status: q.Get("status")}
	page, err := h.st.listRuns(r.Context(), f)
	switch {
	case errors.Is(err, core.ErrUnsupported):
		d.Note = "This store cannot list runs across jobs; open a job to see its runs."
	case err != nil:
		h.renderError(w, r, err)
		return
	}
	d.Runs = page.Runs
	first := url.Values{}
	for k, vs := range q {
		if k != "cursor" {
			first[k] = vs
		}
	}
	d.FirstURL = "runs?" + first.Encode()
	if page.Next != "" {
		first.Set("cursor", page.Next)
		d.NextURL = "runs?" + first.Encode()
	}
	h.render(w, r, http.StatusOK, "runs", h.newView(r, d))
}

func (h *Handler) uiDeleteJob(w http.ResponseWriter, r *http.Request, p params) {
	id, err := jobID(p)
	if err == nil {
		err = h.checkForm(r)
	}
	var j core.Job
	if err == nil {
		_, j, err = h.st.findJob(r.Context(), id)
	}
	if err == nil {
		err = h.deleteJob(r, id, r.PostForm.Get("force") == "1")
	}
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	seeOther(w, "../../jobs?queue="+url.QueryEscape(j.Queue))
}

// bulkData is the confirmation page of a bulk action on the job list's
// filter.
type bulkData struct {
	Action   core.BulkAction
	Count    int64
	Filter   string
	MatchAll bool
}

// uiBulk previews a bulk action on the filter of the job list (the form's
// "filter", a query string) and, from the confirmation page, applies it
// with the previewed count.
func (h *Handler) uiBulk(w http.ResponseWriter, r *http.Request, p params) {
	action, err := bulkAction(p)
	if err == nil {
		err = h.checkForm(r)
	}
	var q url.Values
	if err == nil {
		q, err = url.ParseQuery(r.PostForm.Get("filter"))
		if err != nil {
			err = invalidf("filter", "is not a query string")
		}
	}
	var req core.BulkRequest
	if err == nil {
		q = dropEmpty(q)
		for _, k := range []string{"cursor", "limit", "order", "done"} {
			q.Del(k)
		}
		req.Search, err = parseFilter(q)
		req.Search.Limit = 0
	}
	if err == nil {
		req.Action, req.Limit = core.BulkAction(action), DefaultBulkStep
		if req.Action == core.BulkCancel {
			req.Reason = "cancelled from the dashboard"
		}
		err = core.ValidateBulk(req)
	}
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	if res, confirmed, err := h.formConfirm(r, req, r.PostForm.Get("confirm_all") == "1"); err != nil || confirmed {
		if err != nil {
			h.renderError(w, r, err)
			return
		}
		msg := fmt.Sprintf("%s: %d changed, %d skipped, %d failed", action, res.Changed, res.Skipped, res.Failed)
		if !res.Done {
			msg += "; more match: run it again to continue"
		}
		q.Set("done", msg)
		seeOther(w, "../jobs?"+q.Encode())
		return
	}
	pv, err := h.bulkPreview(r, req)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	d := bulkData{Action: req.Action, Count: pv.Matched, Filter: q.Encode(), MatchAll: matchesAll(req.Search)}
	h.render(w, r, http.StatusOK, "bulk", h.newView(r, d))
}

// formConfirm applies req when the form carries the previewed count
// (confirm_count); confirmed reports that it did.
func (h *Handler) formConfirm(r *http.Request, req core.BulkRequest, confirmAll bool) (res bulkView, confirmed bool, err error) {
	c := r.PostForm.Get("confirm_count")
	if c == "" {
		return bulkView{}, false, nil
	}
	n, err := strconv.ParseInt(c, 10, 64)
	if err != nil || n < 0 {
		return bulkView{}, true, invalidf("confirm_count", "is not a count")
	}
	res, err = h.bulkConfirm(r, req, &n, confirmAll)
	return res, true, err
}
