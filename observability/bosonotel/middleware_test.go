package bosonotel_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	"github.com/boson-go/boson/observability/bosonotel"
	boson "github.com/boson-go/boson/runtime"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var greet = boson.NewTask[string, string]("greet")

type fixture struct {
	rec    *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	client *boson.Client
}

// newFixture starts a worker on mem whose handler for greet fails on
// "fail", snoozes once on "snooze" and greets otherwise.
func newFixture(t *testing.T, opts ...bosonotel.Option) *fixture {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	clock := core.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := mem.New(mem.Options{Clock: clock, Logger: quiet})
	t.Cleanup(func() { _ = b.Close() })
	client, err := boson.NewClient(b, boson.ClientOptions{Clock: clock, Logger: quiet, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w, err := boson.NewWorker(b, boson.WorkerOptions{
		ID: "w1", Clock: clock, Logger: quiet, PollInterval: 5 * time.Millisecond,
		RescueInterval: -1, RetentionInterval: -1,
		Middleware: []boson.Middleware{bosonotel.Middleware(append([]bosonotel.Option{bosonotel.WithTracerProvider(tp)}, opts...)...)},
	})
	if err != nil {
		t.Fatal(err)
	}
	snoozed := false
	err = boson.Register(w, greet, func(ctx context.Context, in string) (string, error) {
		if !trace.SpanFromContext(ctx).SpanContext().IsValid() {
			return "", errors.New("no span in the handler's context")
		}
		switch {
		case in == "fail":
			return "", boson.Permanent(errors.New("boom"))
		case in == "snooze" && !snoozed:
			snoozed = true
			return "", boson.Snooze(0)
		}
		return "hello " + in, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Shutdown(context.Background()) })
	return &fixture{rec: rec, tp: tp, client: client}
}

// spawn spawns greet(in) inside a "request" span and waits for the job.
func (f *fixture) spawn(t *testing.T, in string, opts ...bosonotel.Option) (trace.SpanContext, string) {
	t.Helper()
	ctx, span := f.tp.Tracer("test").Start(context.Background(), "request")
	h, err := boson.Spawn(ctx, f.client, greet, in, bosonotel.SpawnOption(ctx, opts...))
	span.End()
	if err != nil {
		t.Fatal(err)
	}
	_, _ = h.Wait(context.Background())
	return span.SpanContext(), h.ID()
}

// attempts returns the ended attempt spans.
func (f *fixture) attempts() []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range f.rec.Ended() {
		if s.Name() == "process greet" {
			out = append(out, s)
		}
	}
	return out
}

// sameSpan compares span identity, ignoring the remote flag.
func sameSpan(a, b trace.SpanContext) bool {
	return a.IsValid() && a.TraceID() == b.TraceID() && a.SpanID() == b.SpanID()
}

func attr(s sdktrace.ReadOnlySpan, k attribute.Key) attribute.Value {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}

func TestAttemptSpanLinksToSpawn(t *testing.T) {
	f := newFixture(t)
	spawn, id := f.spawn(t, "ada")
	spans := f.attempts()
	if len(spans) != 1 {
		t.Fatalf("%d attempt spans, want 1", len(spans))
	}
	s := spans[0]
	if s.SpanKind() != trace.SpanKindConsumer {
		t.Errorf("kind %v", s.SpanKind())
	}
	if s.Parent().IsValid() || s.SpanContext().TraceID() == spawn.TraceID() {
		t.Errorf("attempt span should start a new trace, parent %v", s.Parent())
	}
	if len(s.Links()) != 1 || !sameSpan(s.Links()[0].SpanContext, spawn) {
		t.Fatalf("links %+v, want the spawn span %v", s.Links(), spawn)
	}
	want := map[attribute.Key]attribute.Value{
		bosonotel.AttrTask:     attribute.StringValue("greet"),
		bosonotel.AttrQueue:    attribute.StringValue(core.DefaultQueue),
		bosonotel.AttrJobID:    attribute.StringValue(id),
		bosonotel.AttrAttempt:  attribute.IntValue(1),
		bosonotel.AttrWorkerID: attribute.StringValue("w1"),
		bosonotel.AttrOutcome:  attribute.StringValue("completed"),
	}
	for k, v := range want {
		if got := attr(s, k); got != v {
			t.Errorf("%s = %v, want %v", k, got.String(), v.String())
		}
	}
	if s.Status().Code == codes.Error {
		t.Errorf("status %v", s.Status())
	}
}

func TestAttemptSpanChildOfSpawn(t *testing.T) {
	f := newFixture(t, bosonotel.WithChildSpans())
	spawn, _ := f.spawn(t, "grace")
	spans := f.attempts()
	if len(spans) != 1 {
		t.Fatalf("%d attempt spans, want 1", len(spans))
	}
	s := spans[0]
	if s.Parent().SpanID() != spawn.SpanID() || s.SpanContext().TraceID() != spawn.TraceID() || !s.Parent().IsRemote() {
		t.Fatalf("parent %v, want the spawn span %v", s.Parent(), spawn)
	}
	if len(s.Links()) != 0 {
		t.Errorf("links %+v", s.Links())
	}
}

func TestAttemptSpanOutcomes(t *testing.T) {
	f := newFixture(t)
	f.spawn(t, "fail")
	f.spawn(t, "snooze")
	spans := f.attempts()
	if len(spans) != 3 {
		t.Fatalf("%d attempt spans, want 3", len(spans))
	}
	if s := spans[0]; s.Status().Code != codes.Error || s.Status().Description != "boom" || attr(s, bosonotel.AttrOutcome).AsString() != "failed" || len(s.Events()) != 1 {
		t.Errorf("failed attempt: status %v outcome %v events %d", s.Status(), attr(s, bosonotel.AttrOutcome).String(), len(s.Events()))
	}
	if s := spans[1]; s.Status().Code == codes.Error || attr(s, bosonotel.AttrOutcome).AsString() != "suspended" {
		t.Errorf("snoozed attempt: status %v outcome %v", s.Status(), attr(s, bosonotel.AttrOutcome).String())
	}
	if s := spans[2]; attr(s, bosonotel.AttrOutcome).AsString() != "completed" || attr(s, bosonotel.AttrAttempt).AsInt64() != 1 {
		t.Errorf("attempt after the snooze: outcome %v attempt %v", attr(s, bosonotel.AttrOutcome).String(), attr(s, bosonotel.AttrAttempt).String())
	}
	// Both attempts of the snoozed job link to the same spawn.
	if !sameSpan(spans[1].Links()[0].SpanContext, spans[2].Links()[0].SpanContext) {
		t.Error("the attempts of one job link to different spawns")
	}
}

func TestNoTraceContext(t *testing.T) {
	f := newFixture(t)
	if h := bosonotel.Headers(context.Background()); len(h) != 0 {
		t.Fatalf("headers without a span: %v", h)
	}
	h, err := boson.Spawn(context.Background(), f.client, greet, "x", bosonotel.SpawnOption(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := f.attempts()
	if len(spans) != 1 || len(spans[0].Links()) != 0 || spans[0].Parent().IsValid() {
		t.Fatalf("spans %d, want one root span without links", len(spans))
	}
}
