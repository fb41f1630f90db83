package core_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

func TestParseRunID(t *testing.T) {
	long := strings.Repeat("j", core.MaxNameLength)
	id := core.NewID(time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC))
	for _, c := range []struct {
		in    string
		job   string
		token int64
	}{
		{"A.1", "A", 1},
		{id + ".9", id, 9},
		{id + ".10", id, 10},
		{"a.b.12", "a.b", 12},
		{"a..3", "a.", 3},
		{long + ".9223372036854775807", long, 1<<63 - 1},
	} {
		job, token, err := core.ParseRunID(c.in)
		if err != nil || job != c.job || token != c.token {
			t.Errorf("ParseRunID(%q) = %q, %d, %v; want %q, %d", c.in, job, token, err, c.job, c.token)
		}
	}
	for _, in := range []string{
		"", ".", "a", "a.", ".1", "a.0", "a.00", "a.-1", "a.+1", "a.01", "a.1 ", "a. 1", " a.1x", "a.1e3",
		"a.0x1", "a.1_000", "a.9223372036854775808", "a.99999999999999999999", "a.١", long + "j.1",
	} {
		job, token, err := core.ParseRunID(in)
		if err == nil {
			t.Errorf("ParseRunID(%q) = %q, %d; want an error", in, job, token)
			continue
		}
		if !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("ParseRunID(%q) error %v does not wrap ErrInvalidArgument", in, err)
		}
		if job != "" || token != 0 {
			t.Errorf("ParseRunID(%q) returned %q, %d with its error", in, job, token)
		}
	}
}

// FuzzParseRunID checks that ParseRunID accepts exactly the ids RunID
// makes of a job id of 1 to MaxNameLength bytes and a positive token, and
// gives back what made them.
func FuzzParseRunID(f *testing.F) {
	for _, s := range []string{"A.1", "a.b.12", "a.0", "a.01", "a.+1", "a.-1", ".1", "a.", "", "x.9223372036854775808", "\xff.7"} {
		f.Add(s, "job", int64(1))
	}
	f.Add("", "a.5", int64(3))
	f.Add("", "", int64(0))
	f.Fuzz(func(t *testing.T, s, jobID string, token int64) {
		job, tok, err := core.ParseRunID(s)
		if err == nil {
			if job == "" || len(job) > core.MaxNameLength || tok <= 0 || core.RunID(job, tok) != s {
				t.Fatalf("ParseRunID(%q) = %q, %d: not what RunID makes", s, job, tok)
			}
		} else if !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("ParseRunID(%q) error %v does not wrap ErrInvalidArgument", s, err)
		}
		job, tok, err = core.ParseRunID(core.RunID(jobID, token))
		valid := jobID != "" && len(jobID) <= core.MaxNameLength && token > 0
		if valid != (err == nil) {
			t.Fatalf("ParseRunID(RunID(%q, %d)) = %v, want accepted=%v", jobID, token, err, valid)
		}
		if valid && (job != jobID || tok != token) {
			t.Fatalf("ParseRunID(RunID(%q, %d)) = %q, %d", jobID, token, job, tok)
		}
	})
}

func requireInvalid(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("%s = %v, want an error wrapping ErrInvalidArgument", what, err)
	}
}

func TestValidateRunFilter(t *testing.T) {
	t0 := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, f := range []core.RunFilter{
		{},
		{JobID: "x", Queue: "q", Task: "t", Statuses: core.AllRunStatuses, Since: t0, Before: t0.Add(time.Nanosecond)},
		{Since: t0},
		{Before: t0},
		{Limit: core.MaxPageSize, Cursor: "job.3", Desc: true},
		{JobID: strings.Repeat("x", core.MaxNameLength)},
	} {
		if err := core.ValidateRunFilter(f); err != nil {
			t.Errorf("ValidateRunFilter(%+v) = %v, want nil", f, err)
		}
	}
	for _, f := range []core.RunFilter{
		{JobID: strings.Repeat("x", core.MaxNameLength+1)},
		{Queue: "bad queue"},
		{Task: "-t"},
		{Statuses: []core.RunStatus{core.RunRunning, "stale"}},
		{Statuses: []core.RunStatus{""}},
		{Since: t0, Before: t0},
		{Since: t0.Add(time.Second), Before: t0},
		{Limit: -1},
		{Limit: core.MaxPageSize + 1},
		{Cursor: "job"},
		{Cursor: "job.0"},
		{Cursor: ".4"},
	} {
		requireInvalid(t, "ValidateRunFilter("+strconv.Quote(f.Cursor)+")", core.ValidateRunFilter(f))
	}
}

func TestValidateJobSearch(t *testing.T) {
	t0 := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	ids := make([]string, core.MaxPageSize)
	for i := range ids {
		ids[i] = core.NewID(t0)
	}
	for _, s := range []core.JobSearch{
		{},
		{HeaderKey: "k"},
		{HeaderKey: "k", HeaderValue: "50% of 'x'"},
		{IDPrefix: "01"},
		{IDs: ids},
		{Created: core.TimeRange{From: t0}},
		{Created: core.TimeRange{To: t0}},
		{Finished: core.TimeRange{From: t0, To: t0.Add(time.Nanosecond)}},
		{JobFilter: core.JobFilter{Queue: "q", Task: "t", States: core.AllStates, Limit: 10, Cursor: ids[0], Desc: true}},
	} {
		if err := core.ValidateJobSearch(s); err != nil {
			t.Errorf("ValidateJobSearch(%.100v) = %v, want nil", s, err)
		}
	}
	for i, s := range []core.JobSearch{
		{HeaderValue: "v"},
		{HeaderKey: strings.Repeat("k", core.DefaultLimits.MaxHeaderBytes+1)},
		{HeaderKey: "k", HeaderValue: strings.Repeat("v", core.DefaultLimits.MaxHeaderBytes)},
		{HeaderKey: "\xff"},
		{HeaderKey: "k", HeaderValue: "\xfe"},
		{IDPrefix: strings.Repeat("0", 2*core.IDLength+1)},
		{IDs: append(ids, "one more")},
		{IDs: []string{"a", ""}},
		{IDs: []string{strings.Repeat("x", core.MaxNameLength+1)}},
		{Created: core.TimeRange{From: t0, To: t0}},
		{Finished: core.TimeRange{From: t0.Add(time.Second), To: t0}},
		{JobFilter: core.JobFilter{Queue: "q q"}},
		{JobFilter: core.JobFilter{States: []core.JobState{"done"}}},
		{JobFilter: core.JobFilter{Limit: core.MaxPageSize + 1}},
	} {
		requireInvalid(t, "ValidateJobSearch case "+strconv.Itoa(i), core.ValidateJobSearch(s))
	}
}

func TestValidateOpsArguments(t *testing.T) {
	if err := core.ValidateKeyLookup("q", "key"); err != nil {
		t.Errorf("ValidateKeyLookup: %v", err)
	}
	for _, a := range [][2]string{{"", "k"}, {"a b", "k"}, {"q", ""}, {"q", "\xff"}, {"q", strings.Repeat("k", core.MaxIdempotencyKeyLength+1)}} {
		requireInvalid(t, "ValidateKeyLookup("+strconv.Quote(a[0])+", "+strconv.Quote(a[1])+")", core.ValidateKeyLookup(a[0], a[1]))
	}
	if err := core.ValidateJobID("x"); err != nil {
		t.Errorf("ValidateJobID: %v", err)
	}
	requireInvalid(t, "ValidateJobID(\"\")", core.ValidateJobID(""))
	requireInvalid(t, "ValidateJobID(too long)", core.ValidateJobID(strings.Repeat("x", core.MaxNameLength+1)))
	l := core.Limits{MaxBatch: 50}
	if err := core.ValidateDeleteQueue(core.DeleteQueueRequest{Queue: "q", Limit: 50}, l); err != nil {
		t.Errorf("ValidateDeleteQueue: %v", err)
	}
	for _, r := range []core.DeleteQueueRequest{{Queue: "q"}, {Queue: "q", Limit: 51}, {Queue: "q", Limit: -1}, {Limit: 1}, {Queue: "q.x", Limit: 1}} {
		requireInvalid(t, "ValidateDeleteQueue("+r.Queue+", "+strconv.Itoa(r.Limit)+")", core.ValidateDeleteQueue(r, l))
	}
}

func TestTimeRange(t *testing.T) {
	t0 := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	r := core.TimeRange{From: t0, To: t0.Add(time.Minute)}
	for _, c := range []struct {
		r    core.TimeRange
		at   time.Time
		want bool
	}{
		{core.TimeRange{}, time.Time{}, true},
		{core.TimeRange{}, t0, true},
		{r, t0, true},
		{r, t0.Add(-time.Nanosecond), false},
		{r, t0.Add(time.Minute - time.Nanosecond), true},
		{r, t0.Add(time.Minute), false},
		{r, time.Time{}, false},
		{core.TimeRange{From: t0}, t0.Add(100 * time.Hour), true},
		{core.TimeRange{To: t0}, time.Time{}, false},
		{core.TimeRange{To: t0}, t0.Add(-time.Hour), true},
	} {
		if got := c.r.Contains(c.at); got != c.want {
			t.Errorf("%+v.Contains(%v) = %v, want %v", c.r, c.at, got, c.want)
		}
	}
	if !(core.TimeRange{}).IsZero() || r.IsZero() || (core.TimeRange{To: t0}).IsZero() {
		t.Error("IsZero is wrong")
	}
}

func TestJobSearchMatches(t *testing.T) {
	t0 := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	j := core.Job{
		ID: "01ABCDEF", Queue: "q", Task: "t", State: core.StateSucceeded,
		Headers:   map[string]string{"tenant": "a", "empty": ""},
		CreatedAt: t0, FinishedAt: t0.Add(time.Hour),
	}
	active := j
	active.State, active.FinishedAt = core.StateQueued, time.Time{}
	for _, c := range []struct {
		name string
		s    core.JobSearch
		j    core.Job
		want bool
	}{
		{"everything", core.JobSearch{}, j, true},
		{"queue", core.JobSearch{JobFilter: core.JobFilter{Queue: "q"}}, j, true},
		{"other queue", core.JobSearch{JobFilter: core.JobFilter{Queue: "q2"}}, j, false},
		{"other task", core.JobSearch{JobFilter: core.JobFilter{Task: "u"}}, j, false},
		{"state", core.JobSearch{JobFilter: core.JobFilter{States: []core.JobState{core.StateFailed, core.StateSucceeded}}}, j, true},
		{"other state", core.JobSearch{JobFilter: core.JobFilter{States: []core.JobState{core.StateFailed}}}, j, false},
		{"header key", core.JobSearch{HeaderKey: "tenant"}, j, true},
		{"header key with empty value", core.JobSearch{HeaderKey: "empty"}, j, true},
		{"missing header", core.JobSearch{HeaderKey: "region"}, j, false},
		{"header key is case sensitive", core.JobSearch{HeaderKey: "Tenant"}, j, false},
		{"header value", core.JobSearch{HeaderKey: "tenant", HeaderValue: "a"}, j, true},
		{"other header value", core.JobSearch{HeaderKey: "tenant", HeaderValue: "b"}, j, false},
		{"header value is no pattern", core.JobSearch{HeaderKey: "tenant", HeaderValue: "%"}, j, false},
		{"header value of a missing key", core.JobSearch{HeaderKey: "region", HeaderValue: "a"}, j, false},
		{"no headers", core.JobSearch{HeaderKey: "tenant"}, core.Job{ID: "x"}, false},
		{"id prefix", core.JobSearch{IDPrefix: "01AB"}, j, true},
		{"whole id as prefix", core.JobSearch{IDPrefix: "01ABCDEF"}, j, true},
		{"longer prefix", core.JobSearch{IDPrefix: "01ABCDEFG"}, j, false},
		{"id prefix is case sensitive", core.JobSearch{IDPrefix: "01ab"}, j, false},
		{"id prefix is no pattern", core.JobSearch{IDPrefix: "0_"}, j, false},
		{"ids", core.JobSearch{IDs: []string{"x", "01ABCDEF"}}, j, true},
		{"other ids", core.JobSearch{IDs: []string{"01ABCDE", "01ABCDEFG"}}, j, false},
		{"created from", core.JobSearch{Created: core.TimeRange{From: t0}}, j, true},
		{"created to", core.JobSearch{Created: core.TimeRange{To: t0}}, j, false},
		{"finished", core.JobSearch{Finished: core.TimeRange{From: t0, To: t0.Add(2 * time.Hour)}}, j, true},
		{"finished before", core.JobSearch{Finished: core.TimeRange{To: t0.Add(time.Hour)}}, j, false},
		{"finished range and an active job", core.JobSearch{Finished: core.TimeRange{To: t0.Add(time.Hour)}}, active, false},
		{"no finished range and an active job", core.JobSearch{}, active, true},
		{"all fields", core.JobSearch{
			JobFilter: core.JobFilter{Queue: "q", Task: "t", States: []core.JobState{core.StateSucceeded}},
			HeaderKey: "tenant", HeaderValue: "a", IDPrefix: "01", IDs: []string{"01ABCDEF"},
			Created: core.TimeRange{From: t0}, Finished: core.TimeRange{From: t0},
		}, j, true},
		{"all fields but one", core.JobSearch{
			JobFilter: core.JobFilter{Queue: "q", Task: "t", States: []core.JobState{core.StateSucceeded}},
			HeaderKey: "tenant", HeaderValue: "a", IDPrefix: "02", IDs: []string{"01ABCDEF"},
		}, j, false},
		{"limit, cursor and order are ignored", core.JobSearch{JobFilter: core.JobFilter{Limit: 1, Cursor: "zzz", Desc: true}}, j, true},
	} {
		if got := c.s.Matches(c.j); got != c.want {
			t.Errorf("%s: Matches = %v, want %v", c.name, got, c.want)
		}
	}
	if (core.JobSearch{JobFilter: core.JobFilter{Queue: "q", States: core.AllStates}}).HasSearchFields() {
		t.Error("HasSearchFields of a JobFilter alone")
	}
	for _, s := range []core.JobSearch{{HeaderKey: "k"}, {IDPrefix: "0"}, {IDs: []string{"x"}}, {Created: core.TimeRange{To: t0}}, {Finished: core.TimeRange{From: t0}}} {
		if !s.HasSearchFields() {
			t.Errorf("HasSearchFields(%+v) = false", s)
		}
	}
}

func TestRunFilterMatches(t *testing.T) {
	t0 := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	r := core.Run{ID: "j.2", JobID: "j", Queue: "q", Task: "t", Token: 2, Status: core.RunLost, StartedAt: t0}
	for _, c := range []struct {
		name string
		f    core.RunFilter
		want bool
	}{
		{"everything", core.RunFilter{}, true},
		{"job", core.RunFilter{JobID: "j"}, true},
		{"other job", core.RunFilter{JobID: "j2"}, false},
		{"queue and task", core.RunFilter{Queue: "q", Task: "t"}, true},
		{"other queue", core.RunFilter{Queue: "q2"}, false},
		{"other task", core.RunFilter{Task: "u"}, false},
		{"status", core.RunFilter{Statuses: []core.RunStatus{core.RunFailed, core.RunLost}}, true},
		{"other status", core.RunFilter{Statuses: []core.RunStatus{core.RunRunning}}, false},
		{"since its start", core.RunFilter{Since: t0}, true},
		{"since after its start", core.RunFilter{Since: t0.Add(time.Nanosecond)}, false},
		{"before its start", core.RunFilter{Before: t0}, false},
		{"before after its start", core.RunFilter{Before: t0.Add(time.Nanosecond)}, true},
		{"paging is ignored", core.RunFilter{Limit: 1, Cursor: "z.1", Desc: true}, true},
	} {
		if got := c.f.Matches(r); got != c.want {
			t.Errorf("%s: Matches = %v, want %v", c.name, got, c.want)
		}
	}
	if (core.RunFilter{}).PageSize() != core.DefaultPageSize || (core.RunFilter{Limit: 7}).PageSize() != 7 {
		t.Error("PageSize is wrong")
	}
}

func TestValidateBulk(t *testing.T) {
	for _, r := range []core.BulkRequest{
		{Action: core.BulkCancel, Limit: 1, Reason: "r"},
		{Action: core.BulkRetry, Limit: core.MaxPageSize, Cursor: "01AB"},
		{Action: core.BulkDelete, Limit: 10, Force: true, DryRun: true, Search: core.JobSearch{HeaderKey: "k"}},
		{Action: core.BulkDelete, Limit: 10, Search: core.JobSearch{JobFilter: core.JobFilter{Limit: 5000}}}, // the search's own limit is ignored
	} {
		if err := core.ValidateBulk(r); err != nil {
			t.Errorf("ValidateBulk(%+v) = %v, want nil", r, err)
		}
	}
	for i, r := range []core.BulkRequest{
		{Limit: 1},
		{Action: "purge", Limit: 1},
		{Action: core.BulkCancel},
		{Action: core.BulkCancel, Limit: -1},
		{Action: core.BulkCancel, Limit: core.MaxPageSize + 1},
		{Action: core.BulkCancel, Limit: 1, Force: true},
		{Action: core.BulkRetry, Limit: 1, Force: true},
		{Action: core.BulkCancel, Limit: 1, Reason: strings.Repeat("r", 4*core.MaxNameLength+1)},
		{Action: core.BulkCancel, Limit: 1, Cursor: strings.Repeat("c", core.MaxNameLength+1)},
		{Action: core.BulkCancel, Limit: 1, Search: core.JobSearch{HeaderValue: "v"}},
	} {
		requireInvalid(t, "ValidateBulk case "+strconv.Itoa(i), core.ValidateBulk(r))
	}
}

// TestBulkUnsupported: a backend without the search capability gets
// ErrUnsupported before anything is read.
func TestBulkUnsupported(t *testing.T) {
	var b core.QueueBackend // no backend at all: Bulk must not call it
	_, err := core.Bulk(context.Background(), b, core.BulkRequest{Action: core.BulkRetry, Limit: 5})
	if !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("Bulk without a JobSearcher = %v, want ErrUnsupported", err)
	}
	_, err = core.Bulk(context.Background(), b, core.BulkRequest{Action: core.BulkRetry})
	requireInvalid(t, "Bulk with no limit", err)
}

// recordingActor is a core.BulkActor that records the steps it is handed;
// its other methods are nil, so Bulk must not call them.
type recordingActor struct {
	core.QueueBackend
	core.JobSearcher
	got []core.BulkRequest
}

func (r *recordingActor) BulkStep(_ context.Context, req core.BulkRequest) (core.BulkResult, error) {
	r.got = append(r.got, req)
	return core.BulkResult{Matched: 1, Changed: 1, Next: "next"}, nil
}

// TestBulkHandsStepToBulkActor: Bulk hands a backend's BulkActor the
// request with its states narrowed to the action's, returns its result
// as it is, and never calls it for a request that no state allows.
func TestBulkHandsStepToBulkActor(t *testing.T) {
	ctx := context.Background()
	a := &recordingActor{}
	req := core.BulkRequest{Action: core.BulkRetry, Limit: 7, Cursor: "c",
		Search: core.JobSearch{JobFilter: core.JobFilter{Queue: "q", States: []core.JobState{core.StateQueued, core.StateFailed, core.StateFailed}}}}
	res, err := core.Bulk(ctx, a, req)
	if err != nil || res.Changed != 1 || res.Next != "next" {
		t.Fatalf("Bulk = %+v, %v; want the actor's result", res, err)
	}
	want := req
	want.Search.States = []core.JobState{core.StateFailed}
	if len(a.got) != 1 || !reflect.DeepEqual(a.got[0], want) {
		t.Fatalf("BulkStep got %+v, want %+v", a.got, want)
	}
	req.Search.States = []core.JobState{core.StateQueued}
	if res, err := core.Bulk(ctx, a, req); err != nil || !res.Done || len(a.got) != 1 {
		t.Fatalf("Bulk retry of queued jobs = %+v, %v after %d steps; want done without a step", res, err, len(a.got))
	}
	a.got = nil
	if _, err := core.Bulk(ctx, a, core.BulkRequest{Action: core.BulkCancel, Limit: 1}); err != nil || len(a.got) != 1 ||
		!reflect.DeepEqual(a.got[0].Search.States, []core.JobState{core.StateQueued, core.StateRunning, core.StateSleeping}) {
		t.Fatalf("Bulk cancel of every job: %v, steps %+v; want one with the cancellable states", err, a.got)
	}
}
