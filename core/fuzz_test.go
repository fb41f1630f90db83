package core_test

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/boson-go/boson/core"
)

// FuzzValidateName checks that a name is accepted exactly when it is 1 to
// MaxNameLength ASCII letters, digits, '_' and '-' starting with a letter
// or digit, so no accepted name can carry SQL, a Redis hash tag or a NATS
// subject token; every refusal wraps ErrInvalidArgument.
func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"default", "q-1_a", "", "-x", "a.b", "a*", ">", "{tag}", "x'; DROP TABLE jobs; --",
		"é", "a b", "\xff", strings.Repeat("a", core.MaxNameLength), strings.Repeat("a", core.MaxNameLength+1)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := core.ValidateName("queue", name)
		want := name != "" && len(name) <= core.MaxNameLength
		for i := 0; want && i < len(name); i++ {
			c := name[i]
			alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
			want = alnum || i > 0 && (c == '_' || c == '-')
		}
		if want != (err == nil) {
			t.Fatalf("ValidateName(%q) = %v, want accepted=%v", name, err, want)
		}
		if err != nil && !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("ValidateName(%q) error %v does not wrap ErrInvalidArgument", name, err)
		}
	})
}

// FuzzPrepareJobs builds one enqueue request from fuzzed fields and checks
// that PrepareJobs either refuses it with ErrInvalidArgument or returns
// one queued job whose fields pass validation again, never panicking.
func FuzzPrepareJobs(f *testing.F) {
	f.Add("default", "send", []byte(`{"a":1}`), "k", "v", 0, 0, int64(0), "", int64(0), int64(0))
	f.Add("", "t", []byte{}, "", "", 1000, 5, int64(time.Second), "key", int64(1), int64(time.Hour))
	f.Add("q'--", "t", []byte("\xff\xfe"), "\xff", "v", -1001, -1, int64(-1), "\xc3", int64(-5), int64(-1))
	f.Add("a.b.>", "{x}", make([]byte, 2<<20), strings.Repeat("h", 70<<10), "", 1, 1<<30, int64(1<<62), strings.Repeat("k", 300), int64(1<<40), int64(1<<62))
	f.Fuzz(func(t *testing.T, queue, task string, payload []byte, hk, hv string, prio, maxAttempts int, retry int64, key string, runAtSec, maxDelay int64) {
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		req := core.EnqueueRequest{
			Queue: queue, Task: task, Payload: payload, Priority: prio, MaxAttempts: maxAttempts,
			Retry:          core.RetryPolicy{Initial: time.Duration(retry), Max: time.Duration(retry) * 2},
			Cancel:         core.CancellationPolicy{MaxDelay: time.Duration(maxDelay)},
			IdempotencyKey: key,
		}
		if hk != "" || hv != "" {
			req.Headers = map[string]string{hk: hv}
		}
		if runAtSec != 0 {
			req.RunAt = now.Add(time.Duration(runAtSec) * time.Second)
		}
		jobs, err := core.PrepareJobs([]core.EnqueueRequest{req}, now, core.Limits{})
		if err != nil {
			if !errors.Is(err, core.ErrInvalidArgument) {
				t.Fatalf("error %v does not wrap ErrInvalidArgument", err)
			}
			if jobs != nil {
				t.Fatalf("refused batch returned jobs")
			}
			return
		}
		if len(jobs) != 1 {
			t.Fatalf("%d jobs", len(jobs))
		}
		j := jobs[0]
		if j.State != core.StateQueued || j.ID == "" || j.MaxAttempts < 1 || j.RunAt.Before(j.CreatedAt) {
			t.Fatalf("prepared job %+v", j)
		}
		if err := core.ValidateName("queue", j.Queue); err != nil {
			t.Fatalf("accepted queue %q: %v", j.Queue, err)
		}
		if err := core.ValidateName("task", j.Task); err != nil {
			t.Fatalf("accepted task %q: %v", j.Task, err)
		}
		if len(j.Payload) > core.DefaultLimits.MaxPayloadBytes {
			t.Fatalf("accepted a payload of %d bytes", len(j.Payload))
		}
		for k, v := range j.Headers {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				t.Fatalf("accepted header %q=%q", k, v)
			}
		}
		if j.Retry.Initial < 0 || j.Cancel.MaxDelay < 0 {
			t.Fatalf("accepted a negative duration: %+v %+v", j.Retry, j.Cancel)
		}
		if err := core.ValidateRequest(req, core.Limits{}); err != nil {
			t.Fatalf("PrepareJobs accepted what ValidateRequest refuses: %v", err)
		}
	})
}

// FuzzTruncateError checks that stored error text is bounded and stays
// valid UTF-8 when it was.
func FuzzTruncateError(f *testing.F) {
	f.Add("boom")
	f.Add(strings.Repeat("é", core.MaxErrorLength))
	f.Add("\xff" + strings.Repeat("x", core.MaxErrorLength))
	f.Fuzz(func(t *testing.T, s string) {
		got := core.TruncateError(s)
		if len(got) > core.MaxErrorLength {
			t.Fatalf("TruncateError kept %d bytes", len(got))
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("TruncateError broke UTF-8: %q", got[max(0, len(got)-8):])
		}
	})
}
