package admin

import (
	"errors"
	"net/http"
	"sort"

	"github.com/boson-go/boson/core"
)

// taskInfo gathers a task's stats and its stored config, if any.
func (h *Handler) taskInfo(r *http.Request, task string) (taskView, error) {
	st, err := h.st.taskStats(r.Context(), task)
	if err != nil {
		return taskView{}, err
	}
	v := taskView{Task: task, Jobs: st.Jobs, Runs: st.Runs, RunTime: st.RunTime.String()}
	cfg, err := h.st.getTaskConfig(r.Context(), task)
	switch {
	case err == nil:
		cv := toTaskConfigView(cfg)
		v.Config = &cv
	case !errors.Is(err, core.ErrNotFound):
		return taskView{}, err
	}
	return v, nil
}

// tasks lists every known task with its stats and config: every task of
// the store where it lists tasks ([core.TaskLister]), else the tasks of
// Options.Tasks and of the newest Options.TaskScanLimit jobs.
func (h *Handler) tasks(r *http.Request) ([]taskView, error) {
	names, err := h.taskNames(r)
	if err != nil {
		return nil, err
	}
	out := make([]taskView, 0, len(names))
	for _, n := range names {
		v, err := h.taskInfo(r, n)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (h *Handler) taskNames(r *http.Request) ([]string, error) {
	ts, err := h.st.listTasks(r.Context())
	if errors.Is(err, core.ErrUnsupported) {
		return h.st.taskNames(r.Context(), h.opts.Tasks, h.opts.TaskScanLimit)
	}
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var names []string
	for _, t := range ts {
		seen[t.Name] = true
		names = append(names, t.Name)
	}
	for _, t := range h.opts.Tasks {
		if !seen[t] {
			seen[t] = true
			names = append(names, t)
		}
	}
	sort.Strings(names)
	return names, nil
}

func taskName(p params) (string, error) {
	t := p.get("task")
	return t, core.ValidateName("task", t)
}

func (h *Handler) apiListTasks(w http.ResponseWriter, r *http.Request, _ params) {
	if len(r.URL.Query()) > 0 {
		h.writeError(w, r, invalidf("query", "this endpoint takes no parameters"))
		return
	}
	ts, err := h.tasks(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": ts})
}

func (h *Handler) apiGetTask(w http.ResponseWriter, r *http.Request, p params) {
	t, err := taskName(p)
	var v taskView
	if err == nil {
		v, err = h.taskInfo(r, t)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (h *Handler) apiGetTaskConfig(w http.ResponseWriter, r *http.Request, p params) {
	t, err := taskName(p)
	var cfg core.TaskConfig
	if err == nil {
		cfg, err = h.st.getTaskConfig(r.Context(), t)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toTaskConfigView(cfg))
}

func (h *Handler) apiPutTaskConfig(w http.ResponseWriter, r *http.Request, p params) {
	t, err := taskName(p)
	var body []byte
	if err == nil {
		body, err = readBody(r)
	}
	if err == nil {
		err = requireJSON(r, body)
	}
	var cfg core.TaskConfig
	if err == nil {
		cfg, err = parseTaskConfig(body, t)
	}
	if err == nil {
		err = h.st.checkFlowConfig(cfg)
	}
	if err == nil {
		err = h.st.putTaskConfig(r.Context(), cfg)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	h.log.InfoContext(r.Context(), "admin: task config stored", "task", t)
	writeJSON(w, http.StatusOK, toTaskConfigView(cfg))
}
