package boson

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/boson-go/boson/core"
)

type fuzzIn struct {
	Name  string            `json:"name"`
	N     int64             `json:"n"`
	F     float64           `json:"f"`
	Tags  []string          `json:"tags"`
	Attrs map[string]string `json:"attrs"`
	Next  *fuzzIn           `json:"next,omitempty"`
	Raw   []byte            `json:"raw"`
}

// FuzzCodec feeds arbitrary bytes to the codec that turns stored payloads,
// results and checkpoint values into task inputs and outputs. It must
// never panic; a refusal wraps core.ErrInvalidArgument; and whatever
// decodes encodes again to bytes that decode to the same value.
func FuzzCodec(f *testing.F) {
	for _, s := range []string{``, `{}`, `null`, `{"name":"x","n":1,"tags":["a"],"attrs":{"k":"v"},"next":{"n":2}}`,
		`{"n":1e400}`, `{"n":"1"}`, `[1,2,3]`, `"\ud800"`, "\"\xff\"", `{"raw":"AAEC"}`, `{"next":{"next":{"next":{}}}}`,
		`{"name":"` + string(bytes.Repeat([]byte("a"), 1000)) + `"}`, `123`, `1.5`, `true`, `{"a":` + string(bytes.Repeat([]byte("["), 200))} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip[fuzzIn](t, b)
		roundTrip[map[string]any](t, b)
		roundTrip[[]int](t, b)
		roundTrip[string](t, b)
		roundTrip[int](t, b)
		roundTrip[*fuzzIn](t, b)
	})
}

func roundTrip[T any](t *testing.T, b []byte) {
	v, err := decode[T]("input", b)
	if err != nil {
		if !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("decode %q as %T: %v does not wrap ErrInvalidArgument", b, v, err)
		}
		return
	}
	enc, err := encode("output", v)
	if err != nil {
		if !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("encode %#v: %v does not wrap ErrInvalidArgument", v, err)
		}
		return
	}
	again, err := decode[T]("input", enc)
	if err != nil {
		t.Fatalf("decode of our own encoding %q: %v", enc, err)
	}
	enc2, err := encode("output", again)
	if err != nil || !bytes.Equal(enc, enc2) {
		t.Fatalf("encoding is not stable: %q then %q (%v)", enc, enc2, err)
	}
	if !reflect.DeepEqual(enc, enc2) {
		t.Fatalf("round trip changed %q", enc)
	}
}
