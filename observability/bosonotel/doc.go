// Package bosonotel traces boson tasks with OpenTelemetry.
//
// The spawn side injects the caller's trace context into the job's headers
// ([SpawnOption]); the worker side ([Middleware]) starts one span per
// attempt, linked to (or, with [WithChildSpans], a child of) the span that
// was current at the spawn. Attempts can run long after the spawn, on
// another machine and more than once, so by default each attempt starts
// its own trace and points back to the spawn through a span link.
//
//	w, _ := boson.NewWorker(backend, boson.WorkerOptions{
//		Middleware: []boson.Middleware{bosonotel.Middleware()},
//	})
//	h, _ := boson.Spawn(ctx, client, Task, in, bosonotel.SpawnOption(ctx))
//
// Headers take part in the idempotency fingerprint of a spawn: two spawns
// with the same idempotency key but different trace contexts conflict
// ([core.ErrIdempotencyConflict]). Do not add trace headers to spawns that
// are retried with a key from different traces (or to periodic schedules).
package bosonotel
