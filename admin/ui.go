package admin

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"

	"github.com/boson-go/boson/core"
)

func (h *Handler) uiRoutes() []route {
	ui := func(method, pattern string, perm Permission, f func(http.ResponseWriter, *http.Request, params)) route {
		return route{method: method, pattern: pattern, perm: perm, serve: f}
	}
	rs := []route{
		ui("GET", "/static/{file}", PermNone, h.serveStatic),
		ui("GET", "/", PermRead, h.uiQueues),
		ui("GET", "/jobs", PermRead, h.uiJobs),
		ui("GET", "/jobs/{id}", PermRead, h.uiJob),
		ui("GET", "/tasks", PermRead, h.uiTasks),
		ui("GET", "/tasks/{task}", PermRead, h.uiTask),
		ui("POST", "/jobs/{id}/cancel", PermAdmin, h.uiCancel),
		ui("POST", "/jobs/{id}/retry", PermAdmin, h.uiRetry),
		ui("POST", "/queues/{queue}/pause", PermAdmin, h.uiPause),
		ui("POST", "/queues/{queue}/resume", PermAdmin, h.uiResume),
	}
	rs = append(rs, h.opsUIRoutes(ui)...)
	if h.opts.Auth.mode == authTokens {
		rs = append(rs,
			ui("GET", "/login", PermNone, h.uiLoginForm),
			ui("POST", "/login", PermNone, h.uiLogin),
			ui("POST", "/logout", PermNone, h.uiLogout),
		)
	}
	return rs
}

func (h *Handler) uiQueues(w http.ResponseWriter, r *http.Request, _ params) {
	qs, err := h.st.listQueues(r.Context())
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "queues", h.newView(r, qs))
}

// jobsData is what the job list page shows.
type jobsData struct {
	Filter core.JobSearch
	State  string
	Order  string
	Jobs   []core.Job
	// NextURL links the next page, empty on the last.
	NextURL template.URL
	// FirstURL links the first page with the same filters.
	FirstURL template.URL
	// BulkFilter is the filter of the page as a query, for bulk actions.
	BulkFilter string
	// Notice reports a bulk action that just ran.
	Notice string
}

func (h *Handler) uiJobs(w http.ResponseWriter, r *http.Request, _ params) {
	q := r.URL.Query()
	// Empty fields of the filter form mean "any".
	for k, vs := range q {
		if len(vs) == 1 && vs[0] == "" {
			q.Del(k)
		}
	}
	notice := q.Get("done")
	q.Del("done")
	// The dashboard lists newest first unless asked otherwise, but a
	// sequence's jobs in the order they run.
	if q.Get("order") == "" {
		order := "desc"
		if q.Get("sequence_key") != "" {
			order = "asc"
		}
		q.Set("order", order)
	}
	f, err := parseFilter(q)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	page, err := h.st.jobPage(r.Context(), f)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	d := jobsData{Filter: f, State: q.Get("state"), Order: q.Get("order"), Jobs: page.Jobs, Notice: shorten(notice, 200)}
	first := url.Values{}
	bulk := url.Values{}
	for k, vs := range q {
		if k != "cursor" {
			first[k] = vs
		}
		if k != "cursor" && k != "limit" && k != "order" {
			bulk[k] = vs
		}
	}
	d.BulkFilter = bulk.Encode()
	// Both links are built from url.Values.Encode and the relative root,
	// so they are safe as they stand; the template must not re-escape the
	// query, which it would do for a plain string after "?".
	root := rootOf(r.URL.Path)
	d.FirstURL = template.URL(root + "jobs?" + first.Encode())
	if page.Next != "" {
		next := url.Values{}
		for k, vs := range first {
			next[k] = vs
		}
		next.Set("cursor", page.Next)
		d.NextURL = template.URL(root + "jobs?" + next.Encode())
	}
	h.render(w, r, http.StatusOK, "jobs", h.newView(r, d))
}

// jobData is what the job page shows.
type jobData struct {
	Job         core.Job
	Runs        []core.Run
	Checkpoints []core.Checkpoint
	// Wait is the job's latest fan-in wait, nil when it never waited or
	// its store cannot park jobs on other jobs.
	Wait *waitView
}

func (h *Handler) uiJob(w http.ResponseWriter, r *http.Request, p params) {
	id, err := jobID(p)
	var b core.QueueBackend
	var d jobData
	if err == nil {
		b, d.Job, err = h.st.findJob(r.Context(), id)
	}
	if err == nil {
		d.Runs, err = b.ListRuns(r.Context(), id)
	}
	if err == nil {
		d.Checkpoints, err = b.Checkpoints(r.Context(), id)
	}
	if aw, ok := b.(core.Awaiter); ok && err == nil {
		var wt core.Wait
		switch wt, err = aw.JobWait(r.Context(), id); {
		case err == nil:
			v := toWaitView(wt, d.Job)
			d.Wait = &v
		case errors.Is(err, core.ErrNotFound):
			err = nil
		}
	}
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "job", h.newView(r, d))
}

func (h *Handler) uiTasks(w http.ResponseWriter, r *http.Request, _ params) {
	ts, err := h.tasks(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "tasks", h.newView(r, ts))
}

// checkForm parses a dashboard form and checks its CSRF token, which is
// bound to the caller's session (or, without one, to its CSRF cookie).
func (h *Handler) checkForm(r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return invalidf("form", "cannot be parsed")
	}
	if !h.checkCSRF(r, r.PostForm.Get("csrf")) {
		return errorf(http.StatusForbidden, "csrf", "the form's CSRF token is missing or stale; reload the page and try again")
	}
	return nil
}

// seeOther redirects with a relative Location, which browsers resolve
// against the URL they asked for, so that redirects work under any prefix.
func seeOther(w http.ResponseWriter, location string) {
	w.Header().Set("Location", location)
	w.WriteHeader(http.StatusSeeOther)
}

func (h *Handler) uiCancel(w http.ResponseWriter, r *http.Request, p params) {
	id, err := jobID(p)
	if err == nil {
		err = h.checkForm(r)
	}
	if err == nil {
		_, err = h.cancelJob(r, id, "")
	}
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	seeOther(w, "../"+url.PathEscape(id))
}

func (h *Handler) uiRetry(w http.ResponseWriter, r *http.Request, p params) {
	id, err := jobID(p)
	if err == nil {
		err = h.checkForm(r)
	}
	if err == nil {
		_, err = h.retryJob(r, id)
	}
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	seeOther(w, "../"+url.PathEscape(id))
}

func (h *Handler) uiPause(w http.ResponseWriter, r *http.Request, p params) {
	h.uiSetPaused(w, r, p, true)
}
func (h *Handler) uiResume(w http.ResponseWriter, r *http.Request, p params) {
	h.uiSetPaused(w, r, p, false)
}

func (h *Handler) uiSetPaused(w http.ResponseWriter, r *http.Request, p params, paused bool) {
	q, err := queueName(p)
	if err == nil {
		err = h.checkForm(r)
	}
	if err == nil {
		err = h.setPaused(r, q, paused)
	}
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	seeOther(w, "../../")
}
