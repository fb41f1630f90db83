package bosonotel

import (
	"context"

	boson "github.com/boson-go/boson/runtime"
	"go.opentelemetry.io/otel/propagation"
)

// Headers returns the trace-context headers of the span current in ctx,
// empty when ctx carries no valid span context.
func Headers(ctx context.Context, opts ...Option) map[string]string {
	c := newConfig(opts)
	carrier := propagation.MapCarrier{}
	c.propagator.Inject(ctx, carrier)
	return carrier
}

// SpawnOption returns a spawn option that records the trace context of ctx
// in the job's headers, so the worker's [Middleware] can link each attempt
// to the current span. Without a span in ctx it adds nothing.
func SpawnOption(ctx context.Context, opts ...Option) boson.SpawnOption {
	return boson.WithHeaders(Headers(ctx, opts...))
}
