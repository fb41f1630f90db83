package boson

import (
	"encoding/json"
	"fmt"
	"reflect"

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

// decode unmarshals JSON into a T. An empty input decodes as T's zero value.
func decode[T any](what string, b []byte) (T, error) {
	var v T
	if len(b) == 0 {
		return v, nil
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("%w: decode %s: %v", core.ErrInvalidArgument, what, err)
	}
	return v, nil
}
