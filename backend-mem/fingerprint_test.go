package mem

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// TestSameFingerprint holds the shortcut that reuses a fingerprint within
// a batch to core's definition.
func TestSameFingerprint(t *testing.T) {
	reqs := []core.EnqueueRequest{
		{Task: "t"},
		{Task: "t", MaxAttempts: core.DefaultMaxAttempts},
		{Queue: "q", Task: "send", Payload: []byte(`{"n":1}`), Priority: 3, Actor: "a", IdempotencyKey: "k"},
		{Task: "t", Payload: []byte{}},
		{Task: "t", Payload: []byte(strings.Repeat("x", 4000))},
		{Task: "t", Headers: map[string]string{}},
		{Task: "t", Headers: map[string]string{"b": "2", "a": "1", "": "", "long": strings.Repeat("v", 600)}},
		{Task: "t", MaxAttempts: 9, Retry: core.RetryPolicy{Initial: time.Second, Factor: 1.5, Max: time.Minute, Jitter: 0.25}},
		{Task: "t", Cancel: core.CancellationPolicy{MaxDelay: time.Hour, MaxDuration: 2 * time.Hour}},
		{Task: strings.Repeat("τ", 40), RunAt: time.Now()},
	}
	for i, r := range reqs {
		for k, o := range reqs {
			if sameFingerprint(&r, &o) && core.Fingerprint(r) != core.Fingerprint(o) {
				t.Errorf("requests %d and %d: sameFingerprint, but the fingerprints differ", i, k)
			}
		}
	}
}

// TestPrepareMatchesCore holds prepare to core.PrepareJobs for everything
// but the id and the times, which Enqueue sets under its lock.
func TestPrepareMatchesCore(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	reqs := []core.EnqueueRequest{
		{Task: "t"},
		{Queue: "q", Task: "send", Payload: []byte(`{"n":1}`), Headers: map[string]string{"a": "1"}, Priority: -3,
			MaxAttempts: 2, Retry: core.RetryPolicy{Initial: time.Second}, Cancel: core.CancellationPolicy{MaxDelay: time.Hour},
			IdempotencyKey: "k", Fingerprint: "fp", Actor: "me"},
		{Task: "t", Payload: []byte{}, Headers: map[string]string{}},
	}
	want, err := core.PrepareJobs(reqs, now, core.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	for i := range reqs {
		var arena []byte
		var got core.Job
		prepare(&got, &reqs[i], &arena)
		if got.Fingerprint == "" {
			got.Fingerprint = core.Fingerprint(reqs[i])
		}
		got.ID, got.CreatedAt, got.RunAt = want[i].ID, want[i].CreatedAt, want[i].RunAt
		w := want[i]
		if (got.Payload == nil) != (w.Payload == nil) || string(got.Payload) != string(w.Payload) ||
			(got.Headers == nil) != (w.Headers == nil) || len(got.Headers) != len(w.Headers) {
			t.Fatalf("request %d: prepared %+v, core %+v", i, got, w)
		}
		if !reflect.DeepEqual(got, w) {
			t.Fatalf("request %d: prepared %+v, core %+v", i, got, w)
		}
	}
}
