package core_test

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

func TestNewIDOrderedAndTimed(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var ids []string
	for i := 0; i < 1000; i++ {
		ids = append(ids, core.NewID(base.Add(time.Duration(i/10)*time.Millisecond)))
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatal("ids are not sorted in creation order")
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if len(id) != core.IDLength || seen[id] {
			t.Fatalf("bad or duplicate id %q", id)
		}
		seen[id] = true
	}
	got, ok := core.IDTime(ids[0])
	if !ok || !got.Equal(base) {
		t.Fatalf("IDTime = %v, %v; want %v", got, ok, base)
	}
	// A clock that goes backwards still yields increasing ids.
	a := core.NewID(base.Add(time.Hour))
	b := core.NewID(base)
	if b <= a {
		t.Fatalf("id went backwards: %s then %s", a, b)
	}
	if _, ok := core.IDTime("not-an-id"); ok {
		t.Fatal("IDTime accepted garbage")
	}
}

func TestValidateName(t *testing.T) {
	good := []string{"a", "default", "email-send", "Task_9", strings.Repeat("x", core.MaxNameLength)}
	for _, n := range good {
		if err := core.ValidateName("queue", n); err != nil {
			t.Errorf("ValidateName(%q) = %v", n, err)
		}
	}
	bad := []string{"", "-lead", "_lead", "a.b", "a b", "a*", "a>", "{tag}", "x'; DROP TABLE jobs;--", "é", "a\x00", strings.Repeat("x", core.MaxNameLength+1)}
	for _, n := range bad {
		err := core.ValidateName("queue", n)
		if !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("ValidateName(%q) = %v, want ErrInvalidArgument", n, err)
		}
		var ve *core.ValidationError
		if !errors.As(err, &ve) || ve.Field != "queue" {
			t.Errorf("ValidateName(%q) error %v is not a ValidationError for queue", n, err)
		}
	}
}

func TestPrepareJobs(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	jobs, err := core.PrepareJobs([]core.EnqueueRequest{
		{Task: "t"},
		{Task: "t", Queue: "q", RunAt: now.Add(time.Hour), MaxAttempts: 2, Priority: -5},
		{Task: "t", RunAt: now.Add(-time.Hour)},
	}, now, core.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	j := jobs[0]
	if j.Queue != core.DefaultQueue || j.MaxAttempts != core.DefaultMaxAttempts || j.State != core.StateQueued || j.Fingerprint == "" {
		t.Fatalf("defaults not applied: %+v", j)
	}
	if !j.RunAt.Equal(now.Truncate(time.Microsecond)) || !j.CreatedAt.Equal(j.RunAt) {
		t.Fatalf("times: %+v", j)
	}
	if !jobs[1].RunAt.Equal(now.Add(time.Hour).Truncate(time.Microsecond)) || jobs[1].Queue != "q" || jobs[1].Priority != -5 {
		t.Fatalf("scheduled job: %+v", jobs[1])
	}
	if !jobs[2].RunAt.Equal(j.CreatedAt) {
		t.Fatalf("a past run-at must become now: %v", jobs[2].RunAt)
	}
	if !(jobs[0].ID < jobs[1].ID && jobs[1].ID < jobs[2].ID) {
		t.Fatal("ids not in batch order")
	}
}

func TestPrepareJobsRejects(t *testing.T) {
	now := time.Now()
	lim := core.Limits{MaxPayloadBytes: 10, MaxHeaderBytes: 8, MaxBatch: 3}
	cases := map[string]core.EnqueueRequest{
		"no task":          {},
		"bad queue":        {Task: "t", Queue: "a.b"},
		"payload":          {Task: "t", Payload: make([]byte, 11)},
		"headers":          {Task: "t", Headers: map[string]string{"abcd": "efghi"}},
		"empty header key": {Task: "t", Headers: map[string]string{"": "x"}},
		"bad utf8 header":  {Task: "t", Headers: map[string]string{"k": "\xff"}},
		"priority high":    {Task: "t", Priority: core.MaxPriority + 1},
		"priority low":     {Task: "t", Priority: core.MinPriority - 1},
		"attempts":         {Task: "t", MaxAttempts: -1},
		"retry negative":   {Task: "t", Retry: core.RetryPolicy{Initial: -1}},
		"retry factor":     {Task: "t", Retry: core.RetryPolicy{Factor: 0.5}},
		"retry jitter":     {Task: "t", Retry: core.RetryPolicy{Jitter: 2}},
		"max delay":        {Task: "t", Cancel: core.CancellationPolicy{MaxDelay: -time.Second}},
		"max duration":     {Task: "t", Cancel: core.CancellationPolicy{MaxDuration: -time.Second}},
		"key length":       {Task: "t", IdempotencyKey: strings.Repeat("k", core.MaxIdempotencyKeyLength+1)},
		"run at":           {Task: "t", RunAt: time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for name, r := range cases {
		_, err := core.PrepareJobs([]core.EnqueueRequest{{Task: "ok"}, r}, now, lim)
		var be *core.BatchError
		if !errors.Is(err, core.ErrInvalidArgument) || !errors.As(err, &be) || be.Index != 1 {
			t.Errorf("%s: err = %v, want a BatchError at index 1 wrapping ErrInvalidArgument", name, err)
		}
	}
	if _, err := core.PrepareJobs(nil, now, lim); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("empty batch: %v", err)
	}
	if _, err := core.PrepareJobs(make([]core.EnqueueRequest, 4), now, lim); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("oversized batch: %v", err)
	}
}

func TestFingerprint(t *testing.T) {
	a := core.EnqueueRequest{Task: "t", Payload: []byte(`{}`), Headers: map[string]string{"a": "1", "b": "2"}}
	b := a
	b.MaxAttempts = core.DefaultMaxAttempts
	b.Queue, b.Priority, b.Actor = "other", 7, "me"
	if core.Fingerprint(a) != core.Fingerprint(b) {
		t.Fatal("defaults, queue, priority and actor must not change the fingerprint")
	}
	for name, mod := range map[string]func(*core.EnqueueRequest){
		"task":     func(r *core.EnqueueRequest) { r.Task = "u" },
		"payload":  func(r *core.EnqueueRequest) { r.Payload = []byte(`{"x":1}`) },
		"headers":  func(r *core.EnqueueRequest) { r.Headers = map[string]string{"a": "1"} },
		"attempts": func(r *core.EnqueueRequest) { r.MaxAttempts = 2 },
		"retry":    func(r *core.EnqueueRequest) { r.Retry.Initial = time.Second },
		"cancel":   func(r *core.EnqueueRequest) { r.Cancel.MaxDelay = time.Second },
	} {
		c := a
		mod(&c)
		if core.Fingerprint(c) == core.Fingerprint(a) {
			t.Errorf("changing %s did not change the fingerprint", name)
		}
	}
}

func TestDeadlines(t *testing.T) {
	t0 := time.Unix(1000, 0).UTC()
	j := core.Job{CreatedAt: t0, Cancel: core.CancellationPolicy{MaxDelay: time.Second, MaxDuration: time.Minute}}
	if _, ok := core.DeadlinePassed(j, t0.Add(999*time.Millisecond)); ok {
		t.Fatal("max delay passed early")
	}
	if _, ok := core.DeadlinePassed(j, t0.Add(time.Second)); !ok {
		t.Fatal("max delay not passed")
	}
	j.FirstStartedAt = t0.Add(10 * time.Second)
	if _, ok := core.DeadlinePassed(j, t0.Add(30*time.Second)); ok {
		t.Fatal("max delay applied after the first start")
	}
	if d, ok := core.Deadline(j); !ok || !d.Equal(t0.Add(70*time.Second)) {
		t.Fatalf("Deadline = %v %v", d, ok)
	}
}

func TestTruncateError(t *testing.T) {
	s := core.TruncateError(strings.Repeat("é", core.MaxErrorLength))
	if len(s) > core.MaxErrorLength || !strings.HasPrefix(s, "é") {
		t.Fatalf("len %d", len(s))
	}
	if got := core.TruncateError("a\xffb"); got != "a\uFFFDb" {
		t.Fatalf("got %q", got)
	}
}

func TestCancelReason(t *testing.T) {
	if got := core.CancelReason(""); got != core.DefaultCancelReason {
		t.Fatalf("empty reason recorded as %q, want %q", got, core.DefaultCancelReason)
	}
	if got := core.CancelReason("operator"); got != "operator" {
		t.Fatalf("reason recorded as %q", got)
	}
	long := strings.Repeat("é", core.MaxErrorLength)
	if got := core.CancelReason(long); got != core.TruncateError(long) {
		t.Fatalf("a long reason recorded with %d bytes, want %d", len(got), len(core.TruncateError(long)))
	}
}

func TestManualClock(t *testing.T) {
	c := core.NewManualClock(time.Unix(10, 5).UTC())
	if !c.Now().Equal(time.Unix(10, 0)) {
		t.Fatal("not truncated to ms")
	}
	c.Advance(time.Second)
	if !c.Now().Equal(time.Unix(11, 0)) {
		t.Fatal("advance")
	}
	var z core.ManualClock
	if !z.Now().Equal(time.Unix(0, 0)) {
		t.Fatal("zero clock")
	}
}

func TestRouter(t *testing.T) {
	var r core.Router
	if _, err := r.Resolve("q"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("empty router: %v", err)
	}
	if err := r.Register("bad name", nil); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatal(err)
	}
	if err := r.Route("q", "missing"); !errors.Is(err, core.ErrNotFound) {
		t.Fatal(err)
	}
}

func TestParseJobState(t *testing.T) {
	for _, s := range core.AllStates {
		if got, err := core.ParseJobState(string(s)); err != nil || got != s {
			t.Fatal(s, err)
		}
	}
	if _, err := core.ParseJobState("done"); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatal(err)
	}
	if !core.StateSleeping.Active() || core.StateFailed.Active() || !core.StateCancelled.Terminal() {
		t.Fatal("state predicates")
	}
}
