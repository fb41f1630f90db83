package admin

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// The seed corpora live in testdata/fuzz; `go test` runs them as tests and
// `go test -fuzz=FuzzParseFilter` (or another target) explores further.

func FuzzParseFilter(f *testing.F) {
	f.Add("queue=mail&task=send_email&state=queued,failed&limit=10&order=desc")
	f.Add("cursor=01KDYAK43N2TVFHXBAP99TVWXS&limit=500")
	f.Add("header_key=tenant&header_value=acme&id_prefix=01K&ids=a,b&created_from=2026-01-01T00:00:00Z&finished_to=2026-02-01T00:00:00Z")
	f.Add("queue=orders&sequence_key=order-1842&limit_key=acme&order=asc")
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		fl, err := parseFilter(q)
		if err != nil {
			return
		}
		if err := core.ValidateJobSearch(fl); err != nil {
			t.Fatalf("accepted a filter that core refuses: %v", err)
		}
		if fl.Limit < 1 || fl.Limit > MaxLimit {
			t.Fatalf("limit %d escaped the cap", fl.Limit)
		}
	})
}

func FuzzParseEnqueue(f *testing.F) {
	f.Add([]byte(`{"task":"send_email","queue":"mail","payload":{"to":"a@example.com"},"priority":3,"delay":"1m","max_attempts":4,"idempotency_key":"k1","headers":{"trace":"abc"}}`))
	f.Add([]byte(`{"task":"blob","payload_base64":"AAEC/w==","run_at":"2030-01-01T00:00:00Z","retry":{"initial":"1s","factor":2,"max":"1h","jitter":0.5},"cancel":{"max_delay":"10m"}}`))
	f.Add([]byte(`{"task":"ship","limit_key":"acme","sequence_key":"order-1","idempotency_key":"k","unique":"by_period","unique_period":"1h"}`))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := parseEnqueue(body, now, "admin", core.Limits{})
		if err != nil {
			return
		}
		if _, err := core.PrepareJobs([]core.EnqueueRequest{req}, now, core.Limits{}); err != nil {
			t.Fatalf("accepted a request that core refuses: %v", err)
		}
		var b enqueueBody
		if json.Unmarshal(body, &b) == nil && b.PayloadBase64 == nil && len(req.Payload) > 0 && !json.Valid(req.Payload) {
			t.Fatalf("a JSON payload was stored as invalid JSON: %q", req.Payload)
		}
	})
}

func FuzzParseTaskConfig(f *testing.F) {
	f.Add([]byte(`{"max_in_flight":10,"max_enqueue_per_second":5,"queue":"mail","priority":-3,"max_attempts":7,"retry":{"initial":"2s","factor":2}}`), "send_email")
	f.Add([]byte(`{"task":"other"}`), "send_email")
	f.Add([]byte(`{"max_running":10,"max_running_per_key":2,"max_starts_per_second":50,"max_starts_per_second_per_key":5,"hold_sequence_on_failure":true}`), "resize")
	f.Fuzz(func(t *testing.T, body []byte, task string) {
		if core.ValidateName("task", task) != nil {
			return
		}
		cfg, err := parseTaskConfig(body, task)
		if err != nil {
			return
		}
		if cfg.Task != task {
			t.Fatalf("config for %q stored under %q", task, cfg.Task)
		}
		if err := core.ValidateTaskConfig(cfg); err != nil {
			t.Fatalf("accepted a config that core refuses: %v", err)
		}
	})
}

func FuzzParseQueueConfig(f *testing.F) {
	f.Add([]byte(`{"retention_ttl":"36h","cleanup_limit":9,"max_running":4}`), "mail", true)
	f.Add([]byte(`{"queue":"other","paused":false}`), "mail", false)
	f.Fuzz(func(t *testing.T, body []byte, queue string, paused bool) {
		if core.ValidateName("queue", queue) != nil {
			return
		}
		var b queueConfigBody
		given := json.Unmarshal(body, &b) == nil && b.Paused != nil
		cfg, err := parseQueueConfig(body, queue, core.QueueConfig{Queue: queue, Paused: paused})
		if err != nil {
			return
		}
		if cfg.Queue != queue {
			t.Fatalf("config for %q stored under %q", queue, cfg.Queue)
		}
		if err := core.ValidateQueueConfig(cfg); err != nil {
			t.Fatalf("accepted a config that core refuses: %v", err)
		}
		if !given && cfg.Paused != paused {
			t.Fatalf("a body without paused changed it to %v", cfg.Paused)
		}
	})
}
