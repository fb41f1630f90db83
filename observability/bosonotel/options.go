package bosonotel

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer bosonotel uses.
const ScopeName = "github.com/boson-go/boson/observability/bosonotel"

// Option adjusts [Middleware] or [SpawnOption]. Give both sides the same
// propagator.
type Option func(*config)

type config struct {
	provider   trace.TracerProvider
	propagator propagation.TextMapPropagator
	child      bool
}

func newConfig(opts []Option) config {
	c := config{}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.provider == nil {
		c.provider = otel.GetTracerProvider()
	}
	if c.propagator == nil {
		c.propagator = propagation.TraceContext{}
	}
	return c
}

// WithTracerProvider sets the provider of the tracer; the default is the
// global provider (otel.GetTracerProvider) at the time of the call.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.provider = tp }
}

// WithPropagator sets how trace context travels in job headers; the
// default is W3C Trace Context ("traceparent", "tracestate").
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(c *config) { c.propagator = p }
}

// WithChildSpans makes each attempt's span a child of the spawn's span
// (one trace from the request to every attempt) instead of the root of a
// new trace that links to it.
func WithChildSpans() Option {
	return func(c *config) { c.child = true }
}
