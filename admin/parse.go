package admin

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/boson-go/boson/core"
)

func invalidf(field, format string, args ...any) error {
	return &core.ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// parseFilter turns query parameters into a job search: queue, task,
// state (repeatable or comma-separated), limit (default [DefaultLimit], at
// most [MaxLimit]), cursor and order ("asc" or "desc"), and the search
// fields header_key, header_value, id_prefix, ids (repeatable or
// comma-separated, at most [core.MaxPageSize]), created_from, created_to,
// finished_from, finished_to (RFC 3339), and the flow keys limit_key and
// sequence_key. Unknown parameters
// are refused so that a typo does not silently widen a listing.
func parseFilter(q url.Values) (core.JobSearch, error) {
	f := core.JobSearch{JobFilter: core.JobFilter{Limit: DefaultLimit}}
	for k := range q {
		if !filterParams[k] {
			return f, invalidf(k, "is not a known parameter (queue, task, state, limit, cursor, order, header_key, header_value, id_prefix, ids, created_from, created_to, finished_from, finished_to, limit_key, sequence_key)")
		}
	}
	for k := range filterParams {
		if k != "state" && k != "ids" && len(q[k]) > 1 {
			return f, invalidf(k, "is given %d times", len(q[k]))
		}
	}
	f.Queue = q.Get("queue")
	f.Task = q.Get("task")
	f.Cursor = q.Get("cursor")
	seen := map[core.JobState]bool{}
	for _, v := range q["state"] {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			st, err := core.ParseJobState(s)
			if err != nil {
				return f, invalidf("state", "%q is not a job state", s)
			}
			if !seen[st] {
				seen[st] = true
				f.States = append(f.States, st)
			}
		}
	}
	var err error
	if f.Limit, f.Desc, err = parsePaging(q, f.Limit); err != nil {
		return f, err
	}
	if f.Cursor != "" {
		if err := core.ValidateName("cursor", f.Cursor); err != nil {
			return f, err
		}
	}
	f.HeaderKey, f.HeaderValue, f.IDPrefix = q.Get("header_key"), q.Get("header_value"), q.Get("id_prefix")
	f.LimitKey, f.SequenceKey = q.Get("limit_key"), q.Get("sequence_key")
	if f.IDs, err = parseIDs(q["ids"]); err != nil {
		return f, err
	}
	if f.Created, err = parseRange(q, "created"); err != nil {
		return f, err
	}
	if f.Finished, err = parseRange(q, "finished"); err != nil {
		return f, err
	}
	if err := core.ValidateJobSearch(f); err != nil {
		return f, err
	}
	return f, nil
}

// parsePaging reads limit (def when absent, else in [1, MaxLimit]) and
// order ("asc" or "desc").
func parsePaging(q url.Values, def int) (limit int, desc bool, err error) {
	limit = def
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			return 0, false, invalidf("limit", "%q must be a whole number in [1, %d]", v, MaxLimit)
		}
		limit = n
	}
	switch q.Get("order") {
	case "", "asc":
	case "desc":
		desc = true
	default:
		return 0, false, invalidf("order", "%q must be asc or desc", q.Get("order"))
	}
	return limit, desc, nil
}

var filterParams = map[string]bool{
	"queue": true, "task": true, "state": true, "limit": true, "cursor": true, "order": true,
	"header_key": true, "header_value": true, "id_prefix": true, "ids": true,
	"created_from": true, "created_to": true, "finished_from": true, "finished_to": true,
	"limit_key": true, "sequence_key": true,
}

// parseIDs splits repeated or comma-separated ids, refusing more than
// core.MaxPageSize before building the list.
func parseIDs(vs []string) ([]string, error) {
	var out []string
	for _, v := range vs {
		if n := strings.Count(v, ",") + 1 + len(out); n > core.MaxPageSize {
			return nil, invalidf("ids", "more than %d ids; split the list", core.MaxPageSize)
		}
		for _, id := range strings.Split(v, ",") {
			if id = strings.TrimSpace(id); id != "" {
				out = append(out, id)
			}
		}
	}
	return out, nil
}

// parseRange reads name_from and name_to as RFC 3339 times.
func parseRange(q url.Values, name string) (core.TimeRange, error) {
	var r core.TimeRange
	for _, side := range []struct {
		key string
		t   *time.Time
	}{{name + "_from", &r.From}, {name + "_to", &r.To}} {
		v := q.Get(side.key)
		if v == "" {
			continue
		}
		t, err := parseTime(v)
		if err != nil {
			return r, invalidf(side.key, "%q is not an RFC 3339 time such as 2026-01-02T15:04:05Z (or 2026-01-02 15:04:05.000Z, as the job list shows times)", shorten(v, 64))
		}
		*side.t = t.UTC()
	}
	if !r.From.IsZero() && !r.To.IsZero() && !r.From.Before(r.To) {
		return r, invalidf(name+"_from", "must be before %s_to", name)
	}
	return r, nil
}

// shownTime is the layout the dashboard shows times in (the "ts"
// template function), which a filter takes back as well, so that a time
// copied from a table can be pasted into the form.
const shownTime = "2006-01-02 15:04:05.999999999Z07:00"

// parseTime reads a time in the dashboard's own layout or in RFC 3339;
// either names its zone. A time in neither gets RFC 3339's error.
func parseTime(v string) (time.Time, error) {
	if t, err := time.Parse(shownTime, v); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339Nano, v)
}

// decodeStrict decodes exactly one JSON value into v, refusing unknown
// fields and trailing data.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		if errors.Is(err, io.EOF) {
			return invalidf("body", "is empty; a JSON object is required")
		}
		return invalidf("body", "%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return invalidf("body", "has data after the JSON value")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalidf("body", "has data after the JSON value")
	}
	return nil
}

// duration is a Go duration string in JSON, such as "1m30s".
type duration time.Duration

// UnmarshalJSON accepts a duration string; numbers are refused because
// their unit would be ambiguous.
func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string such as \"1m30s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as \"1m30s\"", s)
	}
	if v < 0 {
		return fmt.Errorf("%q must not be negative", s)
	}
	*d = duration(v)
	return nil
}

type retryBody struct {
	Initial duration `json:"initial"`
	Factor  float64  `json:"factor"`
	Max     duration `json:"max"`
	Jitter  float64  `json:"jitter"`
}

func (r *retryBody) policy() core.RetryPolicy {
	if r == nil {
		return core.RetryPolicy{}
	}
	return core.RetryPolicy{Initial: time.Duration(r.Initial), Factor: r.Factor, Max: time.Duration(r.Max), Jitter: r.Jitter}
}

type cancelBody struct {
	MaxDelay    duration `json:"max_delay"`
	MaxDuration duration `json:"max_duration"`
}

// enqueueBody is the JSON body of POST /api/v1/jobs.
type enqueueBody struct {
	Task           string            `json:"task"`
	Queue          string            `json:"queue"`
	Payload        json.RawMessage   `json:"payload"`
	PayloadBase64  *string           `json:"payload_base64"`
	Headers        map[string]string `json:"headers"`
	Priority       int               `json:"priority"`
	RunAt          *time.Time        `json:"run_at"`
	Delay          *duration         `json:"delay"`
	MaxAttempts    int               `json:"max_attempts"`
	IdempotencyKey string            `json:"idempotency_key"`
	Retry          *retryBody        `json:"retry"`
	Cancel         *cancelBody       `json:"cancel"`
	Unique         core.UniqueMode   `json:"unique"`
	UniquePeriod   *duration         `json:"unique_period"`
	LimitKey       string            `json:"limit_key"`
	SequenceKey    string            `json:"sequence_key"`
}

// parseEnqueue turns an enqueue body into a request validated by core.
// now is the handler's clock reading, used to turn a delay into a run-at.
// actor is recorded on the job.
func parseEnqueue(data []byte, now time.Time, actor string, l core.Limits) (core.EnqueueRequest, error) {
	var b enqueueBody
	if err := decodeStrict(data, &b); err != nil {
		return core.EnqueueRequest{}, err
	}
	req := core.EnqueueRequest{
		Task: b.Task, Queue: b.Queue, Headers: b.Headers, Priority: b.Priority,
		MaxAttempts: b.MaxAttempts, IdempotencyKey: b.IdempotencyKey, Retry: b.Retry.policy(), Actor: actor,
		Unique: b.Unique, LimitKey: b.LimitKey, SequenceKey: b.SequenceKey,
	}
	if b.UniquePeriod != nil {
		req.UniquePeriod = time.Duration(*b.UniquePeriod)
	}
	if b.Payload != nil && b.PayloadBase64 != nil {
		return req, invalidf("payload", "give payload or payload_base64, not both")
	}
	switch {
	case b.PayloadBase64 != nil:
		p, err := base64.StdEncoding.DecodeString(*b.PayloadBase64)
		if err != nil {
			return req, invalidf("payload_base64", "is not standard base64")
		}
		req.Payload = p
	case len(b.Payload) > 0 && string(b.Payload) != "null":
		var buf bytes.Buffer
		if err := json.Compact(&buf, b.Payload); err != nil {
			return req, invalidf("payload", "is not valid JSON")
		}
		req.Payload = buf.Bytes()
	}
	if b.RunAt != nil && b.Delay != nil {
		return req, invalidf("run_at", "give run_at or delay, not both")
	}
	if b.RunAt != nil {
		req.RunAt = b.RunAt.UTC()
	}
	if b.Delay != nil && *b.Delay > 0 {
		req.RunAt = now.Add(time.Duration(*b.Delay)).UTC()
	}
	if b.Cancel != nil {
		req.Cancel = core.CancellationPolicy{MaxDelay: time.Duration(b.Cancel.MaxDelay), MaxDuration: time.Duration(b.Cancel.MaxDuration)}
	}
	if err := core.ValidateRequest(req, l); err != nil {
		return req, err
	}
	return req, nil
}

// taskConfigBody is the JSON body of PUT /api/v1/tasks/{task}/config.
type taskConfigBody struct {
	Task                string     `json:"task"`
	MaxInFlight         int        `json:"max_in_flight"`
	MaxEnqueuePerSecond int        `json:"max_enqueue_per_second"`
	Queue               string     `json:"queue"`
	Priority            int        `json:"priority"`
	MaxAttempts         int        `json:"max_attempts"`
	Retry               *retryBody `json:"retry"`
	// The flow limits (see core.TaskConfig).
	MaxRunning               int  `json:"max_running"`
	MaxRunningPerKey         int  `json:"max_running_per_key"`
	MaxStartsPerSecond       int  `json:"max_starts_per_second"`
	MaxStartsPerSecondPerKey int  `json:"max_starts_per_second_per_key"`
	HoldSequenceOnFailure    bool `json:"hold_sequence_on_failure"`
}

// parseTaskConfig turns a task config body into a validated config for
// task; a task named in the body must match the path.
func parseTaskConfig(data []byte, task string) (core.TaskConfig, error) {
	var b taskConfigBody
	if err := decodeStrict(data, &b); err != nil {
		return core.TaskConfig{}, err
	}
	if b.Task != "" && b.Task != task {
		return core.TaskConfig{}, invalidf("task", "%q differs from the task %q in the path", b.Task, task)
	}
	c := core.TaskConfig{Task: task, MaxInFlight: b.MaxInFlight, MaxEnqueuePerSecond: b.MaxEnqueuePerSecond,
		Queue: b.Queue, Priority: b.Priority, MaxAttempts: b.MaxAttempts, Retry: b.Retry.policy(),
		MaxRunning: b.MaxRunning, MaxRunningPerKey: b.MaxRunningPerKey, MaxStartsPerSecond: b.MaxStartsPerSecond,
		MaxStartsPerSecondPerKey: b.MaxStartsPerSecondPerKey, HoldSequenceOnFailure: b.HoldSequenceOnFailure}
	if err := core.ValidateTaskConfig(c); err != nil {
		return core.TaskConfig{}, err
	}
	return c, nil
}

// cancelReqBody is the optional JSON body of a cancel.
type cancelReqBody struct {
	Reason string `json:"reason"`
}

func parseCancel(data []byte) (string, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return "", nil
	}
	var b cancelReqBody
	if err := decodeStrict(data, &b); err != nil {
		return "", err
	}
	if len(b.Reason) > 1024 {
		return "", invalidf("reason", "is %d bytes, the limit is 1024", len(b.Reason))
	}
	return core.TruncateError(b.Reason), nil
}
