package core

import (
	"errors"
	"fmt"
)

// Sentinel errors. Backends and the runtime return errors that wrap one of
// these, so callers test them with [errors.Is].
var (
	// ErrNotFound: the job, task config or queue config does not exist.
	ErrNotFound = errors.New("boson: not found")
	// ErrLeaseLost: the lease presented no longer owns the job (it was
	// rescued, cancelled, or claimed again). The mutation changed nothing.
	ErrLeaseLost = errors.New("boson: lease lost")
	// ErrIdempotencyConflict: the idempotency key is held by a job that was
	// enqueued with a different request.
	ErrIdempotencyConflict = errors.New("boson: idempotency conflict")
	// ErrRateLimited: a task config limit (max in flight or max enqueue per
	// second) refused the enqueue. Nothing was stored.
	ErrRateLimited = errors.New("boson: rate limited")
	// ErrInvalidArgument: a caller handed in a value that fails validation.
	ErrInvalidArgument = errors.New("boson: invalid argument")
	// ErrInvalidState: the job is in a state that does not allow the
	// operation (for example retrying a job that succeeded).
	ErrInvalidState = errors.New("boson: invalid state")
	// ErrUnsupported: the backend does not offer the capability.
	ErrUnsupported = errors.New("boson: unsupported")
	// ErrClosed: the backend or runtime was closed.
	ErrClosed = errors.New("boson: closed")
)

// ValidationError describes one invalid input. It wraps [ErrInvalidArgument].
type ValidationError struct {
	// Field names the offending input, for example "queue" or "jobs[3].payload".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *ValidationError) Error() string {
	return fmt.Sprintf("%v: %s: %s", ErrInvalidArgument, e.Field, e.Reason)
}

// Unwrap returns [ErrInvalidArgument].
func (e *ValidationError) Unwrap() error { return ErrInvalidArgument }

func invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// BatchError reports that the item at Index of a batch failed; Err says why.
// Because batch enqueue is atomic, nothing of the batch was stored.
type BatchError struct {
	Index int
	Err   error
}

// Error implements error.
func (e *BatchError) Error() string { return fmt.Sprintf("batch item %d: %v", e.Index, e.Err) }

// Unwrap returns the item's error.
func (e *BatchError) Unwrap() error { return e.Err }
