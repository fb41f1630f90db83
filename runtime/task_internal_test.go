package boson

import (
	"bytes"
	"encoding/json"
	"testing"
)

type emptyOut struct{}

type emptyWithMarshal struct{}

func (emptyWithMarshal) MarshalJSON() ([]byte, error) { return []byte(`"custom"`), nil }

type emptyWithText struct{}

func (*emptyWithText) MarshalText() ([]byte, error) { return []byte("text"), nil }

// TestEncoderForMatchesJSON: the encoder of a type writes what
// encoding/json writes, also for field-less structs with and without
// marshalling methods.
func TestEncoderForMatchesJSON(t *testing.T) {
	check := func(name string, got []byte, err error, v any) {
		t.Helper()
		want, werr := json.Marshal(v)
		if err != nil || werr != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %q, %v; encoding/json gives %q, %v", name, got, err, want, werr)
		}
	}
	b, err := encoderFor[struct{}]("x")(struct{}{})
	check("struct{}", b, err, struct{}{})
	b, err = encoderFor[emptyOut]("x")(emptyOut{})
	check("named empty", b, err, emptyOut{})
	b, err = encoderFor[emptyWithMarshal]("x")(emptyWithMarshal{})
	check("empty with MarshalJSON", b, err, emptyWithMarshal{})
	b, err = encoderFor[emptyWithText]("x")(emptyWithText{})
	check("empty with pointer MarshalText", b, err, emptyWithText{})
	b, err = encoderFor[map[string]int]("x")(map[string]int{"a": 1})
	check("map", b, err, map[string]int{"a": 1})
	b, err = encoderFor[struct{ A int }]("x")(struct{ A int }{2})
	check("struct with a field", b, err, struct{ A int }{2})
}
