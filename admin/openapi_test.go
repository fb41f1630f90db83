package admin

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// The handler is checked against its OpenAPI document both ways: every
// documented operation is routed with the documented permission and
// answers only documented statuses with bodies that fit the documented
// schemas, and every routed API path is documented.

type oaDoc struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas   map[string]map[string]any `json:"schemas"`
		Responses map[string]map[string]any `json:"responses"`
	} `json:"components"`
}

type oaOp struct {
	OperationID string                    `json:"operationId"`
	Permission  string                    `json:"x-permission"`
	Responses   map[string]map[string]any `json:"responses"`
}

var httpMethods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "patch": true}

func loadDoc(t *testing.T) (oaDoc, map[string]oaOp) {
	t.Helper()
	var d oaDoc
	if err := json.Unmarshal(OpenAPI(), &d); err != nil {
		t.Fatal(err)
	}
	ops := map[string]oaOp{} // "GET /jobs/{id}"
	for p, item := range d.Paths {
		for m, raw := range item {
			if !httpMethods[m] {
				continue
			}
			var op oaOp
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			ops[strings.ToUpper(m)+" "+p] = op
		}
	}
	return d, ops
}

func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	e := newEnv(t, Tokens([]string{readToken}, []string{adminToken}))
	_, ops := loadDoc(t)
	routed := map[string]bool{}
	for _, rt := range e.h.routes {
		if !rt.api {
			continue
		}
		key := rt.method + " " + strings.TrimPrefix(rt.pattern, apiPrefix)
		routed[key] = true
		op, ok := ops[key]
		if !ok {
			t.Errorf("routed but not documented: %s", key)
			continue
		}
		if op.Permission != rt.perm.String() {
			t.Errorf("%s: documented permission %q, routed %q", key, op.Permission, rt.perm)
		}
	}
	for key := range ops {
		if !routed[key] {
			t.Errorf("documented but not routed: %s", key)
		}
	}
	seenIDs := map[string]bool{}
	for key, op := range ops {
		if op.OperationID == "" || seenIDs[op.OperationID] {
			t.Errorf("%s: missing or repeated operationId %q", key, op.OperationID)
		}
		seenIDs[op.OperationID] = true
	}
}

// validator checks answers against the document.
type validator struct {
	t      *testing.T
	e      *env
	doc    oaDoc
	ops    map[string]oaOp
	hit    map[string]bool // operationId -> answered 2xx
	checks int
}

// opFor finds the documented operation for a concrete API path.
func (v *validator) opFor(method, path string) (string, oaOp, bool) {
	path, _, _ = strings.Cut(path, "?")
	for key, op := range v.ops {
		m, tmpl, _ := strings.Cut(key, " ")
		if m != method {
			continue
		}
		if _, ok := match(tmpl, path); ok {
			return key, op, true
		}
	}
	return "", oaOp{}, false
}

// call sends a request under /api/v1 and validates the answer.
func (v *validator) call(method, path, token string, body any) (int, []byte) {
	v.t.Helper()
	resp, data := v.e.do(method, apiPrefix+path, token, body, nil)
	key, op, ok := v.opFor(method, path)
	if !ok {
		v.t.Fatalf("%s %s: no documented operation", method, path)
	}
	code := strconv.Itoa(resp.StatusCode)
	r, ok := op.Responses[code]
	if !ok {
		v.t.Errorf("%s (%s): status %s is not documented: %s", key, path, code, data)
		return resp.StatusCode, data
	}
	if ref, ok := r["$ref"].(string); ok {
		r = v.doc.Components.Responses[strings.TrimPrefix(ref, "#/components/responses/")]
	}
	content, _ := r["content"].(map[string]any)
	mt, _ := content["application/json"].(map[string]any)
	schema, _ := mt["schema"].(map[string]any)
	if schema == nil {
		v.t.Errorf("%s: response %s has no JSON schema", key, code)
		return resp.StatusCode, data
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		v.t.Errorf("%s: content type %q", key, ct)
	}
	var val any
	if err := json.Unmarshal(data, &val); err != nil {
		v.t.Errorf("%s: body is not JSON: %v", key, err)
		return resp.StatusCode, data
	}
	if err := v.validate(schema, val, "$"); err != nil {
		v.t.Errorf("%s (%s) %s: %v\nbody: %s", key, path, code, err, data)
	}
	if resp.StatusCode < 300 {
		v.hit[op.OperationID] = true
	}
	v.checks++
	return resp.StatusCode, data
}

// validate checks val against the subset of JSON Schema the document uses.
func (v *validator) validate(s map[string]any, val any, at string) error {
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		target, ok := v.doc.Components.Schemas[name]
		if !ok {
			return fmt.Errorf("%s: unresolved $ref %s", at, ref)
		}
		return v.validate(target, val, at)
	}
	if en, ok := s["enum"].([]any); ok {
		found := false
		for _, x := range en {
			if x == val {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%s: %v is not in the enum %v", at, val, en)
		}
	}
	typ, _ := s["type"].(string)
	switch typ {
	case "":
		return nil
	case "object":
		obj, ok := val.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, have %T", at, val)
		}
		props, _ := s["properties"].(map[string]any)
		for _, r := range asList(s["required"]) {
			if _, ok := obj[r.(string)]; !ok {
				return fmt.Errorf("%s: required property %q is missing", at, r)
			}
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if ps, ok := props[k].(map[string]any); ok {
				if err := v.validate(ps, obj[k], at+"."+k); err != nil {
					return err
				}
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					return fmt.Errorf("%s: property %q is not documented", at, k)
				}
			case map[string]any:
				if err := v.validate(ap, obj[k], at+"."+k); err != nil {
					return err
				}
			}
		}
	case "array":
		arr, ok := val.([]any)
		if !ok {
			return fmt.Errorf("%s: want an array, have %T", at, val)
		}
		items, _ := s["items"].(map[string]any)
		for i, x := range arr {
			if err := v.validate(items, x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case "string":
		str, ok := val.(string)
		if !ok {
			return fmt.Errorf("%s: want a string, have %T", at, val)
		}
		if s["format"] == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				return fmt.Errorf("%s: %q is not a date-time", at, str)
			}
		}
		if pat, ok := s["pattern"].(string); ok && !regexp.MustCompile(pat).MatchString(str) {
			return fmt.Errorf("%s: %q does not match %s", at, str, pat)
		}
	case "integer", "number":
		n, ok := val.(float64)
		if !ok {
			return fmt.Errorf("%s: want a number, have %T", at, val)
		}
		if typ == "integer" && n != math.Trunc(n) {
			return fmt.Errorf("%s: %v is not an integer", at, n)
		}
		if m, ok := s["minimum"].(float64); ok && n < m {
			return fmt.Errorf("%s: %v is below %v", at, n, m)
		}
		if m, ok := s["maximum"].(float64); ok && n > m {
			return fmt.Errorf("%s: %v is above %v", at, n, m)
		}
	case "boolean":
		if _, ok := val.(bool); !ok {
			return fmt.Errorf("%s: want a boolean, have %T", at, val)
		}
	default:
		return fmt.Errorf("%s: the validator does not know type %q", at, typ)
	}
	return nil
}

func asList(x any) []any {
	l, _ := x.([]any)
	return l
}

func TestOpenAPIAnswersMatchDocument(t *testing.T) {
	e := newEnv(t, Tokens([]string{readToken}, []string{adminToken}))
	d, ops := loadDoc(t)
	v := &validator{t: t, e: e, doc: d, ops: ops, hit: map[string]bool{}}
	ids := e.ids
	missing := core.NewID(time.Now())
	R, A := readToken, adminToken

	// Authentication failures on every operation but the document itself.
	for key, op := range ops {
		method, tmpl, _ := strings.Cut(key, " ")
		path := strings.NewReplacer("{id}", ids.queued, "{task}", "send_email", "{queue}", "mail").Replace(tmpl)
		if op.Permission == "none" {
			continue
		}
		if code, _ := v.call(method, path, "", nil); code != 401 {
			t.Errorf("%s without a token: %d", key, code)
		}
		if op.Permission == "admin" {
			if code, _ := v.call(method, path, R, nil); code != 403 {
				t.Errorf("%s with a read token: %d", key, code)
			}
		}
	}

	v.call("GET", "/openapi.json", "", nil)
	v.call("GET", "/jobs", R, nil)
	v.call("GET", "/jobs?queue=mail&state=queued,failed&limit=1&order=desc", R, nil)
	v.call("GET", "/jobs?limit=100000", R, nil)
	v.call("GET", "/jobs?state=nope", R, nil)
	v.call("POST", "/jobs", A, map[string]any{"task": "t", "payload": []int{1, 2}, "idempotency_key": "k"})
	v.call("POST", "/jobs", A, map[string]any{"task": "t", "payload": []int{1, 2}, "idempotency_key": "k"})
	v.call("POST", "/jobs", A, map[string]any{"task": "t", "payload": []int{3}, "idempotency_key": "k"})
	v.call("POST", "/jobs", A, map[string]any{"task": "t", "payload_base64": "////"})
	v.call("POST", "/jobs", A, `{"task": 1}`)
	v.call("POST", "/jobs", A, `{"task":"x","payload":"`+strings.Repeat("a", DefaultMaxBodyBytes)+`"}`)
	for _, id := range []string{ids.queued, ids.succeeded, ids.failed, ids.running, ids.hostile, missing, "bad.id"} {
		v.call("GET", "/jobs/"+id, R, nil)
		v.call("GET", "/jobs/"+id+"/runs", R, nil)
		v.call("GET", "/jobs/"+id+"/checkpoints", R, nil)
	}
	waiting := parkOn(t, e.be, ids.queued, ids.running)
	for _, id := range []string{waiting, ids.queued, missing, "bad.id"} {
		v.call("GET", "/jobs/"+id+"/wait", R, nil)
	}
	v.call("POST", "/jobs/"+ids.running+"/cancel", A, map[string]string{"reason": "stop"})
	v.call("POST", "/jobs/"+ids.succeeded+"/cancel", A, nil)
	v.call("POST", "/jobs/"+missing+"/cancel", A, nil)
	v.call("POST", "/jobs/"+ids.failed+"/retry", A, nil)
	v.call("POST", "/jobs/"+ids.failed+"/retry", A, nil)
	v.call("POST", "/jobs/"+missing+"/retry", A, nil)
	v.call("PUT", "/tasks/send_email/config", A, map[string]any{"max_in_flight": 100, "retry": map[string]any{"initial": "1s"}})
	v.call("PUT", "/tasks/send_email/config", A, map[string]any{"max_in_flight": -1})
	v.call("PUT", "/tasks/limited/config", A, map[string]any{"max_in_flight": 1})
	v.call("POST", "/jobs", A, map[string]any{"task": "limited"})
	v.call("POST", "/jobs", A, map[string]any{"task": "limited"})
	v.call("GET", "/tasks", R, nil)
	v.call("GET", "/tasks/send_email", R, nil)
	v.call("GET", "/tasks/unknown", R, nil)
	v.call("GET", "/tasks/send_email/config", R, nil)
	v.call("GET", "/tasks/unknown/config", R, nil)
	v.call("GET", "/tasks/bad.name/config", R, nil)
	v.call("GET", "/queues", R, nil)
	v.call("POST", "/queues/mail/pause", A, nil)
	v.call("GET", "/queues/mail", R, nil)
	v.call("GET", "/queues", R, nil)
	v.call("POST", "/queues/mail/resume", A, nil)
	v.call("POST", "/queues/bad.name/resume", A, nil)
	v.call("PUT", "/queues/mail/config", A, map[string]any{"retention_ttl": "1h", "cleanup_limit": 5})
	v.call("PUT", "/queues/mail/config", A, map[string]any{"max_running": -1})
	v.call("PUT", "/queues/mail/config", A, `{"paused": "yes"}`)
	v.call("GET", "/queues/mail/config", R, nil)
	v.call("GET", "/queues/bad.name/config", R, nil)
	v.call("GET", "/jobs?limit_key=bad%20key", R, nil)
	v.call("PUT", "/tasks/send_email/config", A, map[string]any{"max_running": 3, "max_running_per_key": 1, "max_starts_per_second": 5, "max_starts_per_second_per_key": 2, "hold_sequence_on_failure": true})
	v.call("PUT", "/tasks/send_email/config", A, map[string]any{"max_running": core.MaxFlowLimit + 1})
	v.call("POST", "/jobs", A, map[string]any{"task": "send_email", "queue": "mail", "limit_key": "acme", "sequence_key": "s1", "idempotency_key": "flow-1", "unique": "while_active"})
	v.call("POST", "/jobs", A, map[string]any{"task": "send_email", "queue": "mail", "idempotency_key": "flow-2", "unique": "by_period", "unique_period": "1m"})
	v.call("POST", "/jobs", A, map[string]any{"task": "send_email", "unique": "never"})
	if _, err := e.be.Claim(t.Context(), core.ClaimRequest{Queue: "mail", WorkerID: "w-oa", Limit: 10, LeaseTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	v.call("GET", "/jobs?limit_key=acme&sequence_key=s1", R, nil)
	v.call("GET", "/counts/jobs?sequence_key=s1", R, nil)
	v.call("GET", "/tasks/send_email/flow", R, nil)
	v.call("GET", "/tasks/send_email/flow?limit=1", R, nil)
	v.call("GET", "/tasks/send_email/flow?limit=5000", R, nil)
	v.call("GET", "/tasks/bad.name/flow", R, nil)
	v.call("PUT", "/queues/mail/config", A, map[string]any{"max_running": 2})
	v.call("GET", "/queues/mail/flow", R, nil)
	v.call("GET", "/queues/mail/flow?x=1", R, nil)
	v.call("GET", "/queues/mail", R, nil)
	v.call("PUT", "/queues/orders", A, map[string]any{"retention_ttl": "24h", "cleanup_limit": 10})
	v.call("PUT", "/queues/orders", A, map[string]any{"retention_ttl": "24h", "cleanup_limit": 10})
	v.call("PUT", "/queues/orders", A, map[string]any{"retention_ttl": "1h"})
	v.call("PUT", "/queues/orders", A, map[string]any{"cleanup_limit": -1})
	v.call("PUT", "/queues/orders", A, `{"retention_ttl": 5}`)
	v.call("PUT", "/queues/empty", A, nil)
	v.call("GET", "/queues/orders", R, nil)

	// The operations capabilities, and hostile input to them.
	v.call("GET", "/jobs?header_key=trace&header_value=%3Cscript%3E&created_from=2020-01-01T00:00:00Z", R, nil)
	v.call("GET", "/jobs?created_from=2026-02-01T00:00:00Z&created_to=2026-01-01T00:00:00Z", R, nil)
	v.call("GET", "/jobs?finished_from=yesterday", R, nil)
	v.call("GET", "/counts/jobs?queue=mail", R, nil)
	v.call("GET", "/counts/jobs?id_prefix=01&state=failed", R, nil)
	v.call("GET", "/counts/jobs?limit=5", R, nil)
	v.call("GET", "/counts/runs?queue=mail&status=succeeded,failed", R, nil)
	v.call("GET", "/counts/runs?since=2026-01-01T00:00:00Z&before=2020-01-01T00:00:00Z", R, nil)
	v.call("GET", "/runs?limit=1&order=desc", R, nil)
	v.call("GET", "/runs?status=exploded", R, nil)
	v.call("GET", "/runs/"+core.RunID(ids.succeeded, 1), R, nil)
	v.call("GET", "/runs/"+missing+".1", R, nil)
	v.call("GET", "/runs/no-token", R, nil)
	v.call("GET", "/queues/mail/activity", R, nil)
	v.call("GET", "/queues/mail/activity?minutes=5", R, nil)
	v.call("POST", "/bulk/retry/preview", A, map[string]any{"filter": map[string]any{"queue": "mail"}})
	v.call("POST", "/bulk/explode/preview", A, map[string]any{"filter": map[string]any{}})
	v.call("POST", "/bulk/retry/preview", A, map[string]any{"filter": map[string]any{"ids": make([]string, 5000)}})
	v.call("POST", "/bulk/cancel", A, map[string]any{"filter": map[string]any{"queue": "mail"}})
	v.call("POST", "/bulk/cancel", A, map[string]any{"filter": map[string]any{}, "confirm_count": 100})
	v.call("POST", "/bulk/cancel", A, map[string]any{"filter": map[string]any{"queue": "mail"}, "confirm_count": 0})
	v.call("POST", "/bulk/cancel", A, map[string]any{"filter": map[string]any{"queue": "mail"}, "confirm_count": 100, "reason": "r"})
	v.call("POST", "/bulk/cancel", A, `{"filter": {"queue": 1}}`)
	v.call("DELETE", "/jobs/"+ids.succeeded, A, nil)
	v.call("DELETE", "/jobs/"+ids.succeeded, A, nil)
	v.call("DELETE", "/jobs/"+ids.queued+"?force=maybe", A, nil)
	v.call("DELETE", "/queues/mail", A, nil)
	v.call("DELETE", "/queues/mail?confirm=mail", A, nil)

	for _, op := range ops {
		if !v.hit[op.OperationID] {
			t.Errorf("operation %s never answered with success", op.OperationID)
		}
	}
	t.Logf("%d answers checked against the document", v.checks)
}

func TestOpenAPIServed(t *testing.T) {
	e := newEnv(t, NoAuth())
	resp, data := e.do("GET", "/api/v1/openapi.json", "", nil, nil)
	var d map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(data, &d) != nil || d["openapi"] != "3.0.3" {
		t.Fatalf("served document: %d", resp.StatusCode)
	}
}

// TestOpenAPIValidatorRefuses keeps the schema check honest: it must refuse
// undocumented properties, wrong types, missing fields and unknown enums.
func TestOpenAPIValidatorRefuses(t *testing.T) {
	d, ops := loadDoc(t)
	v := &validator{t: t, doc: d, ops: ops}
	job := d.Components.Schemas["Job"]
	good := map[string]any{"id": "x", "queue": "q", "task": "t", "state": "queued", "priority": 0.0, "attempt": 0.0, "max_attempts": 5.0, "run_at": "2026-01-01T00:00:00Z", "created_at": "2026-01-01T00:00:00Z"}
	if err := v.validate(job, good, "$"); err != nil {
		t.Fatalf("a valid job was refused: %v", err)
	}
	for name, mutate := range map[string]func(map[string]any){
		"extra":    func(m map[string]any) { m["colour"] = "red" },
		"type":     func(m map[string]any) { m["attempt"] = "1" },
		"missing":  func(m map[string]any) { delete(m, "id") },
		"enum":     func(m map[string]any) { m["state"] = "done" },
		"time":     func(m map[string]any) { m["run_at"] = "yesterday" },
		"fraction": func(m map[string]any) { m["priority"] = 0.5 },
		"nested":   func(m map[string]any) { m["lease"] = map[string]any{"worker_id": 1.0} },
	} {
		bad := map[string]any{}
		for k, x := range good {
			bad[k] = x
		}
		mutate(bad)
		if err := v.validate(job, bad, "$"); err == nil {
			t.Errorf("%s: the validator accepted an invalid job", name)
		}
	}
}
