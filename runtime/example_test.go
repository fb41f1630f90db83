package boson_test

import (
	"context"
	"fmt"

	mem "github.com/boson-go/boson/backend-mem"
	boson "github.com/boson-go/boson/runtime"
)

type AddIn struct{ A, B int }
type AddOut struct{ Sum int }

var Add = boson.NewTask[AddIn, AddOut]("add")

// The quick start: one task, one client, one worker, in one process.
func Example() {
	ctx := context.Background()
	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()

	client, err := boson.NewClient(backend, boson.ClientOptions{})
	if err != nil {
		panic(err)
	}
	worker, err := boson.NewWorker(backend, boson.WorkerOptions{Logger: quiet})
	if err != nil {
		panic(err)
	}
	if err := boson.Register(worker, Add, func(ctx context.Context, in AddIn) (AddOut, error) {
		return AddOut{Sum: in.A + in.B}, nil
	}); err != nil {
		panic(err)
	}
	if err := worker.Start(ctx); err != nil {
		panic(err)
	}
	defer worker.Shutdown(ctx)

	h, err := boson.Spawn(ctx, client, Add, AddIn{A: 20, B: 22})
	if err != nil {
		panic(err)
	}
	out, err := h.Wait(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Sum)
	// Output: 42
}
