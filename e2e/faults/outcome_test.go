package faults_test

import (
	"context"
	"log/slog"
)

// outcomeLog is the worker processes' logger: it records each attempt's
// outcome as the runtime reports it, "C job attempt" when the store
// accepted its completion and "L job attempt" when the store refused one
// of its writes with ErrLeaseLost (a heartbeat or the completion). For
// the fault jobs, which never sleep, an attempt's number is its fencing
// token.
type outcomeLog struct {
	rec   recorder
	attrs []slog.Attr
}

func (h outcomeLog) Enabled(context.Context, slog.Level) bool { return true }

func (h outcomeLog) Handle(_ context.Context, r slog.Record) error {
	var kind string
	switch r.Message {
	case "boson: completed":
		kind = "C"
	case "boson: attempt stopped: lease lost":
		kind = "L"
	default:
		return nil
	}
	var job string
	var attempt int64
	look := func(a slog.Attr) bool {
		switch a.Key {
		case "job_id":
			job = a.Value.String()
		case "attempt":
			attempt = a.Value.Int64()
		}
		return true
	}
	for _, a := range h.attrs {
		look(a)
	}
	r.Attrs(look)
	if job != "" {
		h.rec.line("%s %s %d", kind, job, attempt)
	}
	return nil
}

func (h outcomeLog) WithAttrs(as []slog.Attr) slog.Handler {
	return outcomeLog{rec: h.rec, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h outcomeLog) WithGroup(string) slog.Handler { return h }
