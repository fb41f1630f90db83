package bridge_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/boson-go/boson/core"
	"github.com/boson-go/boson/runtime/bridge"
)

func TestParseRequest(t *testing.T) {
	for _, line := range []string{
		`{"id":1,"op":"step.get","name":"fetch"}`,
		`{"id":2,"op":"step.save","name":"fetch","value":{"rows":[1,2]}}`,
		`  {"id":3,"op":"sleep","name":"nap","delay_ms":1500}` + "\r\n",
		`{"id":4,"op":"sleep","name":"nap","until":"2026-05-01T10:00:00.5Z"}`,
		`{"id":5,"op":"await","job":"01ARZ3NDEKTSV4RRFFQ69G5FAV"}`,
		`{"id":6,"op":"heartbeat"}`,
	} {
		if _, err := bridge.ParseRequest([]byte(line)); err != nil {
			t.Errorf("%s: %v", line, err)
		}
	}
	for line, want := range map[string]string{
		``:                              "empty line",
		`[1]`:                           "a request is a JSON object",
		`{"id":"one","op":"heartbeat"}`: "not a request",
		`{"id":1,"op":"sleep","name":"n","until":"2026-05-01T10:00:00Z","delay_ms":5}`: "not both",
		`{"id":1,"op":"step.get","name":"a","value":1}`:                                "takes no value",
		`{"id":1,"op":"step.get","name":"` + strings.Repeat("a", 200) + `"}`:           "the limit is",
	} {
		_, err := bridge.ParseRequest([]byte(line))
		if !errors.Is(err, core.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
			t.Errorf("%.50s: %v, want an invalid-argument error saying %q", line, err, want)
		}
	}
}

// TestErrorCodes: a refusal's code maps to core's sentinels.
func TestErrorCodes(t *testing.T) {
	for code, want := range map[string]error{
		bridge.CodeLeaseLost: core.ErrLeaseLost, bridge.CodeInvalid: core.ErrInvalidArgument,
		bridge.CodeNotFound: core.ErrNotFound, bridge.CodeTaskFailed: bridge.ErrTaskFailed,
		bridge.CodeTaskCancelled: bridge.ErrTaskCancelled, bridge.CodeSuspended: core.ErrInvalidState,
	} {
		if err := error(&bridge.Error{Code: code}); !errors.Is(err, want) {
			t.Errorf("%s does not wrap %v", code, want)
		}
	}
	if !bridge.IsPermanent(&bridge.Error{Code: bridge.CodeInvalid, Permanent: true}) || bridge.IsPermanent(&bridge.Error{Code: bridge.CodeFailed}) {
		t.Error("IsPermanent does not follow the refusal's flag")
	}
}

// FuzzParseRequest: the parser never panics; what it refuses wraps
// core.ErrInvalidArgument, and what it accepts encodes to a line it
// accepts again as the same request.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"op":"step.get","name":"fetch"}`, `{"id":2,"op":"step.save","name":"f","value":[1,"two",{"3":null}]}`,
		`{"id":3,"op":"sleep","name":"n","delay_ms":1}`, `{"id":4,"op":"sleep","name":"n","until":"2026-01-01T00:00:00Z"}`,
		`{"id":5,"op":"await","job":"x"}`, `{"op":"heartbeat"}`, `{"id":1e30}`, `{"value":"\u0000"}`, "{\"name\":\"\xff\"}",
		`{"id":1,"op":"step.save","name":"a","value":1}{}`, `{"id":-1,"op":"heartbeat"}`, ` {}`, `nul`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := bridge.ParseRequest(line)
		if err != nil {
			if !errors.Is(err, core.ErrInvalidArgument) {
				t.Fatalf("refusal %v does not wrap ErrInvalidArgument", err)
			}
			return
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("accepted %q does not encode: %v", line, err)
		}
		again, err := bridge.ParseRequest(b)
		if err != nil {
			t.Fatalf("accepted %q, refused its encoding %s: %v", line, b, err)
		}
		if len(r.Value) > 0 {
			var v1, v2 any
			_ = json.Unmarshal(r.Value, &v1)
			_ = json.Unmarshal(again.Value, &v2)
			if !reflect.DeepEqual(v1, v2) {
				t.Fatalf("value %s became %s", r.Value, again.Value)
			}
			r.Value, again.Value = nil, nil
		}
		if !reflect.DeepEqual(r, again) {
			t.Fatalf("%+v became %+v", r, again)
		}
	})
}
