package core_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// referenceFingerprint is the fingerprint's definition written plainly:
// stored fingerprints must never change, so the fast implementation is
// held to it.
func referenceFingerprint(r core.EnqueueRequest) string {
	h := sha256.New()
	var buf [8]byte
	writeInt := func(v int64) {
		binary.BigEndian.PutUint64(buf[:], uint64(v))
		h.Write(buf[:])
	}
	writeBytes := func(b []byte) {
		writeInt(int64(len(b)))
		h.Write(b)
	}
	writeBytes([]byte(r.Task))
	writeBytes(r.Payload)
	keys := make([]string, 0, len(r.Headers))
	for k := range r.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	writeInt(int64(len(keys)))
	for _, k := range keys {
		writeBytes([]byte(k))
		writeBytes([]byte(r.Headers[k]))
	}
	attempts := r.MaxAttempts
	if attempts == 0 {
		attempts = core.DefaultMaxAttempts
	}
	writeInt(int64(attempts))
	writeInt(int64(r.Retry.Initial))
	writeInt(int64(math.Float64bits(r.Retry.Factor)))
	writeInt(int64(r.Retry.Max))
	writeInt(int64(math.Float64bits(r.Retry.Jitter)))
	writeInt(int64(r.Cancel.MaxDelay))
	writeInt(int64(r.Cancel.MaxDuration))
	if r.LimitKey != "" || r.SequenceKey != "" || r.Unique != "" || r.UniquePeriod != 0 {
		writeBytes([]byte(r.Unique))
		writeInt(int64(r.UniquePeriod))
		writeBytes([]byte(r.LimitKey))
		writeBytes([]byte(r.SequenceKey))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestFingerprintMatchesDefinition(t *testing.T) {
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
		{Task: "t", IdempotencyKey: "k", Unique: core.UniqueByPeriod, UniquePeriod: time.Hour},
		{Task: "t", LimitKey: "tenant"},
		{Task: "t", SequenceKey: "s", LimitKey: "l", IdempotencyKey: "k", Unique: core.UniqueWhileActive},
	}
	for i, r := range reqs {
		if got, want := core.Fingerprint(r), referenceFingerprint(r); got != want {
			t.Errorf("request %d: fingerprint %s, definition says %s", i, got, want)
		}
	}
	// A value stored by earlier versions stays valid.
	if got := core.Fingerprint(core.EnqueueRequest{Task: "t"}); got != referenceFingerprint(core.EnqueueRequest{Task: "t"}) || len(got) != 64 {
		t.Fatalf("fingerprint of a bare request: %s", got)
	}
}

func TestFingerprintAllocatesOnlyItsResult(t *testing.T) {
	r := core.EnqueueRequest{Task: "send", Payload: []byte(`{"to":"a@example.com"}`)}
	if n := testing.AllocsPerRun(100, func() { _ = core.Fingerprint(r) }); n > 1 {
		t.Fatalf("%v allocations per fingerprint, want at most 1", n)
	}
}

func TestRequestJobAppliesDefaults(t *testing.T) {
	r := core.EnqueueRequest{Task: "t", Payload: []byte("{}"), Priority: -3, Actor: "a", Fingerprint: "f"}
	j := core.RequestJob(&r)
	if j.Queue != core.DefaultQueue || j.MaxAttempts != core.DefaultMaxAttempts || j.State != core.StateQueued ||
		j.Priority != -3 || j.Actor != "a" || j.Fingerprint != "f" || j.ID != "" || !j.CreatedAt.IsZero() {
		t.Fatalf("job %+v", j)
	}
}
