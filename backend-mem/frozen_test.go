package mem

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// TestFrozenRoundTrip holds decodeBody(encodeBody(b)) to b, field by field,
// including nil against empty slices and maps and zero times.
func TestFrozenRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)
	full := &jobBody{
		job: core.Job{
			ID: core.NewID(at), Queue: "q", Task: "t", Payload: []byte(`{"n":1}`),
			Headers: map[string]string{"a": "1", "b": ""}, Priority: -7, State: core.StateFailed,
			Attempt: 3, MaxAttempts: 3, Retry: core.RetryPolicy{Initial: time.Second, Factor: 1.5, Max: time.Minute, Jitter: 0.2},
			Cancel: core.CancellationPolicy{MaxDelay: time.Hour, MaxDuration: 2 * time.Hour}, IdempotencyKey: "k",
			Fingerprint: "fp", Actor: "me", RunAt: at, CreatedAt: at.Add(-time.Hour), FirstStartedAt: at.Add(time.Millisecond),
			FinishedAt: at.Add(time.Second), Result: []byte("r"), LastError: "boom",
			Lease:  core.Lease{JobID: "j", WorkerID: "w", Token: 3, ExpiresAt: at.Add(time.Minute + 5)},
			Unique: core.UniqueByPeriod, UniquePeriod: time.Hour, LimitKey: "tenant-1", SequenceKey: "order-7",
		},
		runs: []core.Run{
			{ID: "r1", JobID: "j", Attempt: 1, WorkerID: "w", Token: 1, Status: core.RunLost, StartedAt: at, FinishedAt: at.Add(1), Error: "lease expired"},
			{ID: "r2", JobID: "j", Attempt: 2, WorkerID: "w", Token: 2, Status: core.RunRunning, StartedAt: at},
		},
		checkpoints: map[string]core.Checkpoint{
			"s1": {JobID: "j", Step: "s1", Value: []byte("v"), CreatedAt: at},
			"s2": {JobID: "j", Step: "s2", Value: []byte{}, CreatedAt: at},
			"s3": {JobID: "j", Step: "s3", CreatedAt: at},
		},
	}
	empty := &jobBody{job: core.Job{ID: "x", Payload: []byte{}, Headers: map[string]string{}, Result: []byte{}},
		checkpoints: map[string]core.Checkpoint{}}
	bare := &jobBody{job: core.Job{ID: "y", State: core.StateSucceeded, RunAt: time.Unix(0, 0).UTC()}}
	// The usual case: ids repeated, a fingerprint made by core.
	id := core.NewID(at)
	usual := &jobBody{
		job: core.Job{ID: id, Queue: "q", Task: "t", State: core.StateSucceeded, Fingerprint: core.Fingerprint(core.EnqueueRequest{Task: "t"}),
			Lease: core.Lease{JobID: id, WorkerID: "w", Token: 1, ExpiresAt: at}},
		runs:        []core.Run{{ID: core.NewID(at), JobID: id, Attempt: 1, WorkerID: "w", Token: 1, Status: core.RunSucceeded, StartedAt: at, FinishedAt: at}},
		checkpoints: map[string]core.Checkpoint{"s": {JobID: id, Step: "s", Value: []byte("v"), CreatedAt: at}},
	}
	upper := &jobBody{job: core.Job{ID: "z", Fingerprint: strings.ToUpper(usual.job.Fingerprint)}}
	for i, b := range []*jobBody{full, empty, bare, usual, upper} {
		enc := encodeBody(nil, b)
		if len(enc) > sizeBound(b) {
			t.Errorf("body %d: encoded in %d bytes, bound %d", i, len(enc), sizeBound(b))
		}
		got := decodeBody(enc)
		if !reflect.DeepEqual(got.job, b.job) {
			t.Errorf("body %d: job %+v, want %+v", i, got.job, b.job)
		}
		if !reflect.DeepEqual(got.runs, b.runs) {
			t.Errorf("body %d: runs %+v, want %+v", i, got.runs, b.runs)
		}
		if !reflect.DeepEqual(got.checkpoints, b.checkpoints) {
			t.Errorf("body %d: checkpoints %+v, want %+v", i, got.checkpoints, b.checkpoints)
		}
	}
}
