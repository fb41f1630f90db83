// Module observability holds the adapters that export boson's runtime
// metrics and traces: package bosonprom (a Prometheus collector) and
// package bosonotel (OpenTelemetry tracing). They live in their own module
// so that the runtime keeps its small dependency set.
package observability
