package admin

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

func TestAPICreateQueue(t *testing.T) {
	e := newEnv(t, Tokens([]string{readToken}, []string{adminToken}))
	cfg := map[string]any{"retention_ttl": "2h", "cleanup_limit": 7}
	var got queueCreatedView
	decode := func(data []byte) queueCreatedView {
		t.Helper()
		var v queueCreatedView
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	got = decode(e.expect("PUT", "/api/v1/queues/orders", adminToken, cfg, 201, ""))
	if !got.Created || !got.Queue.Declared || got.Queue.RetentionTTL != "2h0m0s" || got.Queue.CleanupLimit != 7 {
		t.Fatalf("first PUT = %+v", got)
	}
	got = decode(e.expect("PUT", "/api/v1/queues/orders", adminToken, cfg, 200, ""))
	if got.Created || !got.Queue.Declared {
		t.Fatalf("repeat PUT = %+v", got)
	}
	e.expect("PUT", "/api/v1/queues/orders", adminToken, map[string]any{"retention_ttl": "1h"}, 409, "queue_conflict")
	e.expect("PUT", "/api/v1/queues/orders", adminToken, map[string]any{"queue": "other"}, 400, "invalid_argument")
	e.expect("PUT", "/api/v1/queues/orders", readToken, cfg, 403, "forbidden")
	stored, err := e.be.GetQueueConfig(t.Context(), "orders")
	if err != nil || stored != (core.QueueConfig{Queue: "orders", RetentionTTL: 2 * time.Hour, CleanupLimit: 7}) {
		t.Fatalf("stored config after a conflict = %+v, %v", stored, err)
	}
	var qs struct{ Queues []queueView }
	e.do("GET", "/api/v1/queues", readToken, nil, &qs)
	for _, q := range qs.Queues {
		if q.Declared != (q.Queue == "orders") {
			t.Fatalf("GET /queues: %s declared %v", q.Queue, q.Declared)
		}
	}
}
