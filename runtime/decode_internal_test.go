package boson

import (
	"encoding/json"
	"reflect"
	"testing"
)

type decodeProbe struct {
	Seq   int               `json:"seq"`
	Name  string            `json:"name,omitempty"`
	Tags  []string          `json:"tags"`
	Attrs map[string]any    `json:"attrs"`
	Next  *decodeProbe      `json:"next"`
	Raw   json.RawMessage   `json:"raw"`
	Flags map[string]bool   `json:"-"`
	Deep  map[string][]uint `json:"deep"`
}

// sameAsUnmarshal checks that decode gives what json.Unmarshal gives for
// b: the same value, or an error exactly when Unmarshal fails.
func sameAsUnmarshal[T any](t *testing.T, b []byte) {
	t.Helper()
	got, err := decode[T]("x", b)
	var want T
	werr := error(nil)
	if len(b) > 0 {
		werr = json.Unmarshal(b, &want)
	}
	if (err == nil) != (werr == nil) {
		t.Fatalf("%q as %T: decode error %v, json.Unmarshal error %v", b, want, err, werr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q as %T: decode %#v, json.Unmarshal %#v", b, want, got, want)
	}
}

// FuzzDecodeMatchesUnmarshal: the pooled decoder agrees with
// json.Unmarshal on every input, for several target types, also when one
// decoder serves inputs one after another (a and then b).
func FuzzDecodeMatchesUnmarshal(f *testing.F) {
	for _, s := range []string{
		`{"seq":1}`, `{"seq":1} `, ` {"seq":1}`, `{"seq":1}]`, `{"seq":1}}`, `{"seq":1} {"seq":2}`,
		`{"seq":1}x`, `[1,2]`, `1 2`, `"s"`, `null`, `{"seq":"1"}`, `{"name":"a\u00e9\n"}`,
		`{"next":{"seq":2,"next":{}}}`, `{"raw":[1,{"a":null}]}`, `{`, `}`, `{"seq":1,}`, "",
		`{"attrs":{"a":1.5e300,"b":[true,false,null]}}`, `{"deep":{"k":[1,2,18446744073709551615]}}`,
		`{"deep":{"k":[-1]}}`, "\t\n{\"seq\":3}\r\n", `{"Seq":4,"SEQ":5}`,
	} {
		f.Add([]byte(s), []byte(`{"seq":9}`))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		for _, in := range [][]byte{a, b, a} {
			sameAsUnmarshal[decodeProbe](t, in)
			sameAsUnmarshal[map[string]any](t, in)
			sameAsUnmarshal[[]int](t, in)
			sameAsUnmarshal[int](t, in)
			sameAsUnmarshal[string](t, in)
			sameAsUnmarshal[any](t, in)
		}
	})
}
