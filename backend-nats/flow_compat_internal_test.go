package natsq

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// A snapshot and commands written before flow control (no flow fields, no
// key holders, no start counters, no command version) still decode and
// apply: every job is unkeyed and unsequenced, and each idempotency key
// is held by the one job that carries it.
func TestFlowOldSnapshotAndCommands(t *testing.T) {
	now := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	ts := now.Format(time.RFC3339Nano)
	old := `{"version":1,"applied":7,"last_ts":"` + ts + `","jobs":[` +
		`{"job":{"id":"01A","queue":"q","task":"t","state":"queued","priority":0,"attempt":0,"max_attempts":3,"idempotency_key":"k","fingerprint":"f","run_at":"` + ts + `","created_at":"` + ts + `"}},` +
		`{"job":{"id":"01B","queue":"q","task":"t","state":"failed","priority":0,"attempt":3,"max_attempts":3,"fingerprint":"g","run_at":"` + ts + `","created_at":"` + ts + `","finished_at":"` + ts + `"}}` +
		`],"task_configs":[{"task":"t","max_in_flight":10}]}`
	s, err := decodeSnapshot([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkFlowIndexes(s); err != nil {
		t.Fatal(err)
	}
	if h := s.holder("q", "k", now); h == nil || h.job.ID != "01A" {
		t.Fatalf("key k is held by %v, want job 01A", h)
	}
	// An old enqueue command with the same key reuses the job.
	var c command
	if err := json.Unmarshal([]byte(`{"op":"enqueue","o":"old","r":1,"now":"`+ts+`","jobs":[{"id":"01C","queue":"q","task":"t","state":"queued","max_attempts":3,"idempotency_key":"k","fingerprint":"f","run_at":"`+ts+`","created_at":"`+ts+`"}]}`), &c); err != nil {
		t.Fatal(err)
	}
	out, err := s.apply(&c)
	if err != nil || out.err != nil || len(out.enqueued) != 1 || !out.enqueued[0].Reused || out.enqueued[0].Job.ID != "01A" {
		t.Fatalf("old enqueue = %+v, %v; want job 01A reused", out, err)
	}
	if err := json.Unmarshal([]byte(`{"op":"claim","o":"old","r":2,"now":"`+ts+`","queue":"q","worker":"w","limit":5,"ttl":60000000000}`), &c); err != nil {
		t.Fatal(err)
	}
	out, err = s.apply(&c)
	if err != nil || len(out.jobs) != 1 || out.jobs[0].ID != "01A" || out.jobs[0].LimitKey != "" || out.jobs[0].Unique != core.UniqueUntilRetention {
		t.Fatalf("old claim = %+v, %v; want job 01A", out.jobs, err)
	}
	if err := checkFlowIndexes(s); err != nil {
		t.Fatal(err)
	}
	// The snapshot of that state marks the key holder and decodes to it.
	data, err := s.encodeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := decodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := digest(s2), digest(s); got != want {
		t.Fatalf("re-encoded snapshot differs:\n%s", lineDiff(got, want))
	}
}
