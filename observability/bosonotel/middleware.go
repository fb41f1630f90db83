package bosonotel

import (
	"context"
	"errors"

	boson "github.com/boson-go/boson/runtime"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys set on every attempt span, next to the OpenTelemetry
// messaging attributes (messaging.system "boson", the queue as
// destination, the job id as message id).
const (
	AttrTask     = attribute.Key("boson.task")
	AttrQueue    = attribute.Key("boson.queue")
	AttrJobID    = attribute.Key("boson.job.id")
	AttrAttempt  = attribute.Key("boson.attempt")
	AttrWorkerID = attribute.Key("boson.worker.id")
	// AttrOutcome is "completed", "failed" or "suspended" (a durable
	// sleep or snooze released the claim; not an error).
	AttrOutcome = attribute.Key("boson.outcome")
)

// Middleware returns a worker middleware that runs every attempt inside a
// span named "process <task>" of kind consumer. The span links to the
// spawn's span when the job's headers carry a trace context (see
// [SpawnOption]), or is its child with [WithChildSpans]. A failed attempt
// records the error and sets the span status to Error; a suspended one
// (SleepFor, Snooze) does not. Handlers see the span in their context, so
// their own spans and spawns nest under it.
func Middleware(opts ...Option) boson.Middleware {
	c := newConfig(opts)
	tracer := c.provider.Tracer(ScopeName)
	return func(next boson.ExecuteFunc) boson.ExecuteFunc {
		return func(ctx context.Context, ex *boson.Execution) ([]byte, error) {
			j := ex.Job
			extracted := c.propagator.Extract(ctx, propagation.MapCarrier(copyHeaders(j.Headers)))
			spawn := trace.SpanContextFromContext(extracted)
			if spawn.Equal(trace.SpanContextFromContext(ctx)) {
				spawn = trace.SpanContext{} // nothing in the headers
			}
			startOpts := []trace.SpanStartOption{
				trace.WithSpanKind(trace.SpanKindConsumer),
				trace.WithAttributes(
					attribute.String("messaging.system", "boson"),
					attribute.String("messaging.operation.type", "process"),
					attribute.String("messaging.destination.name", j.Queue),
					attribute.String("messaging.message.id", j.ID),
					AttrTask.String(j.Task),
					AttrQueue.String(j.Queue),
					AttrJobID.String(j.ID),
					AttrAttempt.Int(j.Attempt),
					AttrWorkerID.String(ex.WorkerID),
				),
			}
			parent := extracted
			if !c.child || !spawn.IsValid() {
				// Keep baggage and the like from the headers, but not the
				// spawn's span as parent.
				parent = trace.ContextWithSpanContext(extracted, trace.SpanContextFromContext(ctx))
				if spawn.IsValid() {
					startOpts = append(startOpts, trace.WithLinks(trace.Link{SpanContext: spawn}))
				}
			}
			ctx, span := tracer.Start(parent, "process "+j.Task, startOpts...)
			defer span.End()
			out, err := next(ctx, ex)
			var snooze *boson.SnoozeError
			switch {
			case err == nil:
				span.SetAttributes(AttrOutcome.String("completed"))
			case boson.IsSuspend(err) || errors.As(err, &snooze):
				span.SetAttributes(AttrOutcome.String("suspended"))
			default:
				span.SetAttributes(AttrOutcome.String("failed"))
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			return out, err
		}
	}
}

// copyHeaders guards the job's headers against a propagator that writes.
func copyHeaders(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[k] = v
	}
	return out
}
