package admin

import (
	"net/url"
	"strings"
	"time"

	"github.com/boson-go/boson/core"
)

// searchBody is the JSON form of a job search in bulk requests.
type searchBody struct {
	Queue        string     `json:"queue"`
	Task         string     `json:"task"`
	States       []string   `json:"states"`
	HeaderKey    string     `json:"header_key"`
	HeaderValue  string     `json:"header_value"`
	IDPrefix     string     `json:"id_prefix"`
	IDs          []string   `json:"ids"`
	CreatedFrom  *time.Time `json:"created_from"`
	CreatedTo    *time.Time `json:"created_to"`
	FinishedFrom *time.Time `json:"finished_from"`
	FinishedTo   *time.Time `json:"finished_to"`
	LimitKey     string     `json:"limit_key"`
	SequenceKey  string     `json:"sequence_key"`
}

func orZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// search validates b as a core.JobSearch.
func (b searchBody) search() (core.JobSearch, error) {
	s := core.JobSearch{
		JobFilter: core.JobFilter{Queue: b.Queue, Task: b.Task},
		HeaderKey: b.HeaderKey, HeaderValue: b.HeaderValue, IDPrefix: b.IDPrefix, IDs: b.IDs,
		Created:  core.TimeRange{From: orZero(b.CreatedFrom), To: orZero(b.CreatedTo)},
		Finished: core.TimeRange{From: orZero(b.FinishedFrom), To: orZero(b.FinishedTo)},
		LimitKey: b.LimitKey, SequenceKey: b.SequenceKey,
	}
	if len(b.IDs) > core.MaxPageSize {
		return s, invalidf("ids", "%d ids, the limit is %d; split the list", len(b.IDs), core.MaxPageSize)
	}
	for _, v := range b.States {
		st, err := core.ParseJobState(v)
		if err != nil {
			return s, invalidf("states", "%q is not a job state", shorten(v, 64))
		}
		s.States = append(s.States, st)
	}
	for name, r := range map[string]core.TimeRange{"created": s.Created, "finished": s.Finished} {
		if !r.From.IsZero() && !r.To.IsZero() && !r.From.Before(r.To) {
			return s, invalidf(name+"_from", "must be before %s_to", name)
		}
	}
	return s, core.ValidateJobSearch(s)
}

// matchesAll reports whether s selects every job.
func matchesAll(s core.JobSearch) bool {
	return s.Queue == "" && s.Task == "" && len(s.States) == 0 && !hasSearch(s)
}

// bulkBody is the JSON body of a bulk preview or confirm.
type bulkBody struct {
	Filter searchBody `json:"filter"`
	Reason string     `json:"reason"`
	Force  bool       `json:"force"`
	// ConfirmCount is the count the preview showed; a confirm needs it,
	// and is refused when the filter now matches more jobs.
	ConfirmCount *int64 `json:"confirm_count"`
	// ConfirmAll must be set to act on a filter that matches every job.
	ConfirmAll bool   `json:"confirm_all"`
	Cursor     string `json:"cursor"`
	Limit      int    `json:"limit"`
}

// parseBulk reads a bulk body for action into a request for core.Bulk.
func parseBulk(data []byte, action string) (core.BulkRequest, bulkBody, error) {
	var b bulkBody
	if err := decodeStrict(data, &b); err != nil {
		return core.BulkRequest{}, b, err
	}
	s, err := b.Filter.search()
	if err != nil {
		return core.BulkRequest{}, b, err
	}
	if b.Limit == 0 {
		b.Limit = DefaultBulkStep
	}
	req := core.BulkRequest{Action: core.BulkAction(action), Search: s, Reason: core.TruncateError(b.Reason), Force: b.Force, Limit: b.Limit, Cursor: b.Cursor}
	// The cursor is the store's, opaque, perhaps after the "<index>~" of
	// a router's store (see bulkRun); core checks the store's part.
	check := req
	if i, c, ok := strings.Cut(b.Cursor, "~"); ok && i != "" && strings.Trim(i, "0123456789") == "" {
		check.Cursor = c
	}
	return req, b, core.ValidateBulk(check)
}

// parseRunFilter turns query parameters into a run filter: job_id, queue,
// task, status (repeatable or comma-separated), since and before (RFC
// 3339), limit, cursor and order. Unknown parameters are refused.
func parseRunFilter(q url.Values, paging bool) (core.RunFilter, error) {
	f := core.RunFilter{Limit: DefaultLimit}
	known := map[string]bool{"job_id": true, "queue": true, "task": true, "status": true, "since": true, "before": true}
	if paging {
		known["limit"], known["cursor"], known["order"] = true, true, true
	}
	for k, vs := range q {
		if !known[k] {
			return f, invalidf(k, "is not a known parameter here")
		}
		if k != "status" && len(vs) > 1 {
			return f, invalidf(k, "is given %d times", len(vs))
		}
	}
	f.JobID, f.Queue, f.Task, f.Cursor = q.Get("job_id"), q.Get("queue"), q.Get("task"), q.Get("cursor")
	for _, v := range q["status"] {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			st := core.RunStatus(s)
			if !st.Valid() {
				return f, invalidf("status", "%q is not a run status", shorten(s, 64))
			}
			f.Statuses = append(f.Statuses, st)
		}
	}
	for _, side := range []struct {
		key string
		t   *time.Time
	}{{"since", &f.Since}, {"before", &f.Before}} {
		if v := q.Get(side.key); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return f, invalidf(side.key, "%q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", shorten(v, 64))
			}
			*side.t = t.UTC()
		}
	}
	if !f.Since.IsZero() && !f.Before.IsZero() && !f.Since.Before(f.Before) {
		return f, invalidf("since", "must be before before")
	}
	var err error
	if f.Limit, f.Desc, err = parsePaging(q, f.Limit); err != nil {
		return f, err
	}
	return f, core.ValidateRunFilter(f)
}
