package bosonotel_test

import (
	"context"
	"fmt"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/observability/bosonotel"
	boson "github.com/boson-go/boson/runtime"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Trace a task from its spawn to its attempt. A real service would give
// the tracer provider an exporter (OTLP, say) instead of a recorder, and
// usually set it globally with otel.SetTracerProvider.
func Example() {
	ctx := context.Background()
	recorder := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	defer tp.Shutdown(ctx)

	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	client, _ := boson.NewClient(backend, boson.ClientOptions{Logger: quiet})
	worker, _ := boson.NewWorker(backend, boson.WorkerOptions{
		ID:         "worker-1",
		Logger:     quiet,
		Middleware: []boson.Middleware{bosonotel.Middleware(bosonotel.WithTracerProvider(tp))},
	})
	_ = boson.Register(worker, greet, func(_ context.Context, name string) (string, error) { return "hello " + name, nil })
	_ = worker.Start(ctx)
	defer worker.Shutdown(ctx)

	// The spawn happens inside a request's span; its trace context rides
	// in the job's headers.
	reqCtx, request := tp.Tracer("api").Start(ctx, "POST /greet")
	h, _ := boson.Spawn(reqCtx, client, greet, "ada", bosonotel.SpawnOption(reqCtx))
	request.End()
	out, _ := h.Wait(ctx)
	fmt.Println(out)

	for _, s := range recorder.Ended() {
		if s.Name() != "process greet" {
			continue
		}
		link := s.Links()[0].SpanContext
		fmt.Println(s.Name(), "links to the request span:", link.SpanID() == request.SpanContext().SpanID())
	}
	// Output:
	// hello ada
	// process greet links to the request span: true
}
