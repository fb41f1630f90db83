package admin

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// withoutFlow is the in-memory backend with only its base contract and
// search visible: a store that searches but does not enforce flow control.
type withoutFlow struct {
	core.QueueBackend
	core.JobSearcher
}

// hideFlow serves the env's backend as withoutFlow.
func hideFlow(o *Options) {
	o.Backend = withoutFlow{QueueBackend: o.Backend, JobSearcher: o.Backend.(core.JobSearcher)}
}

// TestFlowWithoutFlowController checks that a store without
// core.FlowController answers every flow read, flow search, flow config
// and flow enqueue with 501 unsupported naming flow control and changes
// nothing, while invalid input is still a 400 and the rest of the configs
// work.
func TestFlowWithoutFlowController(t *testing.T) {
	e := newEnv(t, NoAuth(), hideFlow)
	ctx := context.Background()
	before := e.states("mail")

	unsupported := func(method, path string, body any) {
		t.Helper()
		data := e.expect(method, path, "", body, 501, "unsupported")
		if !strings.Contains(string(data), "flow control") {
			t.Errorf("%s %s: %s does not name flow control", method, path, data)
		}
	}
	unsupported("GET", "/api/v1/tasks/send_email/flow", nil)
	unsupported("GET", "/api/v1/queues/mail/flow", nil)
	unsupported("GET", "/api/v1/jobs?limit_key=acme", nil)
	unsupported("GET", "/api/v1/jobs?sequence_key=order-1&order=asc", nil)
	unsupported("GET", "/api/v1/counts/jobs?limit_key=acme", nil)
	unsupported("POST", "/api/v1/bulk/cancel/preview", map[string]any{"filter": map[string]any{"limit_key": "acme"}})
	unsupported("POST", "/api/v1/bulk/cancel", map[string]any{"filter": map[string]any{"sequence_key": "s"}, "confirm_count": 5})
	unsupported("PUT", "/api/v1/tasks/send_email/config", map[string]any{"max_running": 2})
	unsupported("PUT", "/api/v1/tasks/send_email/config", map[string]any{"hold_sequence_on_failure": true})
	unsupported("PUT", "/api/v1/queues/mail/config", map[string]any{"max_running": 2})
	unsupported("POST", "/api/v1/jobs", map[string]any{"task": "t", "queue": "mail", "limit_key": "acme"})
	unsupported("POST", "/api/v1/jobs", map[string]any{"task": "t", "queue": "mail", "sequence_key": "s"})
	unsupported("POST", "/api/v1/jobs", map[string]any{"task": "t", "queue": "mail", "idempotency_key": "k", "unique": "while_active"})

	// Invalid input is refused as such first, whatever the store offers.
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"PUT", "/api/v1/tasks/send_email/config", map[string]any{"max_running": -1}},
		{"PUT", "/api/v1/tasks/send_email/config", map[string]any{"max_starts_per_second_per_key": core.MaxFlowLimit + 1}},
		{"PUT", "/api/v1/tasks/send_email/config", map[string]any{"max_running_per_key": "2"}},
		{"PUT", "/api/v1/queues/mail/config", map[string]any{"max_running": -3}},
		{"PUT", "/api/v1/queues/mail/config", map[string]any{"queue": "other"}},
		{"PUT", "/api/v1/queues/mail/config", map[string]any{"retention_ttl": 5}},
		{"PUT", "/api/v1/queues/mail/config", map[string]any{"burst": 1}},
		{"POST", "/api/v1/jobs", map[string]any{"task": "t", "limit_key": "not a name"}},
		{"POST", "/api/v1/jobs", map[string]any{"task": "t", "idempotency_key": "k", "unique": "sometimes"}},
		{"POST", "/api/v1/jobs", map[string]any{"task": "t", "unique": "while_active"}},
		{"POST", "/api/v1/jobs", map[string]any{"task": "t", "idempotency_key": "k", "unique": "by_period"}},
		{"GET", "/api/v1/jobs?limit_key=a%20b", nil},
		{"GET", "/api/v1/jobs?sequence_key=x&sequence_key=y", nil},
		{"GET", "/api/v1/tasks/bad.name/flow", nil},
		{"GET", "/api/v1/tasks/send_email/flow?limit=0", nil},
		{"GET", "/api/v1/tasks/send_email/flow?keys=3", nil},
		{"GET", "/api/v1/queues/mail/flow?x=1", nil},
		{"POST", "/api/v1/bulk/cancel/preview", map[string]any{"filter": map[string]any{"limit_key": "a/b"}}},
	} {
		e.expect(c.method, c.path, "", c.body, 400, "invalid_argument")
	}
	if after := e.states("mail"); len(after) != len(before) || after[core.StateQueued] != before[core.StateQueued] {
		t.Fatalf("refused requests changed jobs: %v, was %v", after, before)
	}
	if _, err := e.be.GetTaskConfig(ctx, "send_email"); err == nil {
		t.Fatal("a refused task config was stored")
	}

	// Queue settings without a flow limit are stored; paused is kept
	// unless given.
	e.expect("POST", "/api/v1/queues/mail/pause", "", nil, 200, "")
	var qc queueSettingsView
	e.do("PUT", "/api/v1/queues/mail/config", "", map[string]any{"retention_ttl": "36h", "cleanup_limit": 9}, &qc)
	stored, err := e.be.GetQueueConfig(ctx, "mail")
	if err != nil || !stored.Paused || stored.RetentionTTL != 36*time.Hour || stored.CleanupLimit != 9 || stored.MaxRunning != 0 {
		t.Fatalf("stored queue config %+v %v", stored, err)
	}
	if qc != (queueSettingsView{Queue: "mail", Paused: true, RetentionTTL: "36h0m0s", CleanupLimit: 9}) {
		t.Fatalf("answer %+v", qc)
	}
	e.do("PUT", "/api/v1/queues/mail/config", "", map[string]any{"paused": false}, &qc)
	e.do("GET", "/api/v1/queues/mail/config", "", nil, &qc)
	if qc != (queueSettingsView{Queue: "mail"}) {
		t.Fatalf("after a put of paused only: %+v", qc)
	}
	e.do("GET", "/api/v1/queues/never-used/config", "", nil, &qc)
	if qc != (queueSettingsView{Queue: "never-used"}) {
		t.Fatalf("a queue without settings: %+v", qc)
	}

	// The dashboard's task page says what is missing; a search by key is
	// an error page, not a list that ignores the key.
	code, html := getPage(t, e.srv.Client(), e.srv.URL+"/tasks/send_email")
	if code != 200 || !strings.Contains(html, `id="flow-missing"`) || !strings.Contains(html, "flow control") {
		t.Fatalf("task page without flow control: %d\n%s", code, html)
	}
	if code, html := getPage(t, e.srv.Client(), e.srv.URL+"/jobs?limit_key=acme"); code != 501 || strings.Contains(html, `data-job=`) {
		t.Fatalf("job list by limit key without flow control: %d\n%s", code, html)
	}
}
