package boson

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"sync"

	"github.com/boson-go/boson/core"
)

// Task ties a stable, persisted task name to the Go types of its input and
// output. Producers and workers share one Task value; nothing is registered
// globally. The name and the [Task.Signature] are the durable compatibility
// boundary: a worker decodes with In only jobs whose recorded signature its
// handler accepts, and the client decodes their results with Out, so keep
// Out's JSON encoding compatible while old work may exist.
type Task[In, Out any] struct {
	name string
	sig  string
}

// NewTask returns the task called name with input type In and output type
// Out. Inputs and outputs travel as JSON. The name must satisfy
// [core.ValidateName]; an invalid name is reported by every spawn and by
// registration, never by a panic. Every job records the task's
// [Task.Signature], derived from the shape of In or from a [Version]
// option, and a worker whose handler has another signature refuses the
// job before decoding it (see [SignaturePolicy]).
func NewTask[In, Out any](name string, opts ...TaskOption) Task[In, Out] {
	return Task[In, Out]{name: name, sig: taskSignature(reflect.TypeFor[In](), opts)}
}

// Name returns the persisted task name.
func (t Task[In, Out]) Name() string { return t.name }

// Validate reports whether the task's name and version are valid, with an
// error wrapping [core.ErrInvalidArgument] when they are not.
func (t Task[In, Out]) Validate() error {
	if err := core.ValidateName("task", t.name); err != nil {
		return err
	}
	return validateSignature(t.sig)
}

// encode marshals v as JSON, wrapping failures in core.ErrInvalidArgument.
func encode(what string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: encode %s: %v", core.ErrInvalidArgument, what, err)
	}
	return b, nil
}

// decode unmarshals JSON into a T as [json.Unmarshal] does. An empty input
// decodes as T's zero value.
func decode[T any](what string, b []byte) (T, error) {
	var v T
	if len(b) == 0 {
		return v, nil
	}
	if decodePooled(b, &v) {
		return v, nil
	}
	var fresh T
	if err := json.Unmarshal(b, &fresh); err != nil {
		return fresh, fmt.Errorf("%w: decode %s: %v", core.ErrInvalidArgument, what, err)
	}
	return fresh, nil
}

// maxPooledDecode bounds the inputs decoded with a pooled decoder, so that
// the pool keeps no large buffers.
const maxPooledDecode = 16 << 10

// pooledDecoder is a [json.Decoder] kept for reuse: its decoding state and
// buffer serve input after input instead of being allocated by every
// json.Unmarshal.
type pooledDecoder struct {
	in  []byte // what Read has not handed to dec yet
	fed int64  // bytes handed to dec, in all
	dec *json.Decoder
}

// Read implements io.Reader over in.
func (p *pooledDecoder) Read(b []byte) (int, error) {
	if len(p.in) == 0 {
		return 0, io.EOF
	}
	n := copy(b, p.in)
	p.in = p.in[n:]
	p.fed += int64(n)
	return n, nil
}

var decoders = sync.Pool{New: func() any {
	p := &pooledDecoder{}
	p.dec = json.NewDecoder(p)
	return p
}}

// decodePooled decodes b into v with a pooled decoder and reports whether
// b was exactly one JSON value (and white space) that decoded without
// error. When it reports false, v may be partly written and the caller
// decodes b again with json.Unmarshal, which gives the error (or, should
// the two ever disagree, the value) encoding/json gives.
func decodePooled(b []byte, v any) bool {
	if len(b) > maxPooledDecode {
		return false
	}
	p := decoders.Get().(*pooledDecoder)
	p.in = b
	if p.dec.Decode(v) != nil || p.dec.More() || p.dec.InputOffset() != p.fed || len(p.in) != 0 {
		return false // the decoder's state is unknown: drop it
	}
	decoders.Put(p)
	return true
}

// encoderFor returns the encoder of T's JSON: encode, or, for a struct
// type without fields or marshalling methods (struct{}, the output of
// many tasks), one that returns "{}" without reflection.
func encoderFor[T any](what string) func(T) ([]byte, error) {
	t := reflect.TypeFor[T]()
	if t.Kind() == reflect.Struct && t.NumField() == 0 && !marshals(t) && !marshals(reflect.PointerTo(t)) {
		return func(T) ([]byte, error) { return []byte("{}"), nil }
	}
	return func(v T) ([]byte, error) { return encode(what, v) }
}

// marshals reports whether t has a method that encoding/json would call.
func marshals(t reflect.Type) bool {
	return t.Implements(jsonMarshaler) || t.Implements(textMarshaler)
}
