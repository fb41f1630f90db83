package boson_test

import (
	"context"
	"fmt"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	boson "github.com/boson-go/boson/runtime"
)

var (
	SumSquares = boson.NewTask[int, int]("sum-squares")
	FirstOf    = boson.NewTask[[]int, int]("first-of")
	// spawnedSquares records the children's ids, so every run of the
	// parent awaits the same children.
	spawnedSquares = boson.NewStep[[]string]("spawn-squares")
)

// A parent spawns its children into its own queue, on a worker of one
// slot, and awaits them all. The first run parks the parent in the store
// (it holds no slot), the slot runs the children, and the last child's
// completion wakes the parent, whose second run returns the sum.
func ExampleAwaitAll() {
	ctx := context.Background()
	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	client, _ := boson.NewClient(backend, boson.ClientOptions{})
	worker, _ := boson.NewWorker(backend, boson.WorkerOptions{Logger: quiet, Concurrency: 1, PollInterval: 10 * time.Millisecond})

	_ = boson.Register(worker, Square, func(ctx context.Context, n int) (int, error) { return n * n, nil })
	runs := 0
	_ = boson.Register(worker, SumSquares, func(ctx context.Context, n int) (int, error) {
		runs++
		ids, err := spawnedSquares.Run(ctx, func(ctx context.Context) ([]string, error) {
			ins := make([]int, n)
			for i := range ins {
				ins[i] = i + 1
			}
			hs, err := boson.SpawnBatch(ctx, client, Square, ins)
			ids := make([]string, len(hs))
			for i, h := range hs {
				ids[i] = h.ID()
			}
			return ids, err
		})
		if err != nil {
			return 0, err
		}
		hs := make([]*boson.Handle[int], len(ids))
		for i, id := range ids {
			if hs[i], err = boson.HandleFor(ctx, client, Square, id); err != nil {
				return 0, err
			}
		}
		squares, err := boson.AwaitAll(ctx, hs) // parks the first run
		sum := 0
		for _, s := range squares {
			sum += s
		}
		return sum, err
	})
	_ = worker.Start(ctx)
	defer worker.Shutdown(ctx)

	h, _ := boson.Spawn(ctx, client, SumSquares, 4)
	out, err := h.Wait(ctx)
	fmt.Println(out, err, "parent runs:", runs)
	// Output: 30 <nil> parent runs: 2
}

// AwaitAny returns the first child to end; the choice is checkpointed,
// so a replay of the parent returns the same child.
func ExampleAwaitAny() {
	ctx := context.Background()
	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	client, _ := boson.NewClient(backend, boson.ClientOptions{})
	worker, _ := boson.NewWorker(backend, boson.WorkerOptions{Logger: quiet, Queues: []string{"default", "slow"}, PollInterval: 10 * time.Millisecond})

	_ = boson.Register(worker, Square, func(ctx context.Context, n int) (int, error) { return n * n, nil })
	_ = boson.Register(worker, FirstOf, func(ctx context.Context, ns []int) (int, error) {
		info, _ := boson.Info(ctx)
		var hs []*boson.Handle[int]
		for i, n := range ns {
			q := "default"
			if i > 0 {
				q = "slow" // these wait an hour before they may run
			}
			h, err := boson.Spawn(ctx, client, Square, n, boson.WithQueue(q),
				boson.WithDelay(time.Duration(i)*time.Hour), boson.WithIdempotencyKey(fmt.Sprintf("%s-%d", info.JobID, i)))
			if err != nil {
				return 0, err
			}
			hs = append(hs, h)
		}
		i, v, err := boson.AwaitAny(ctx, hs, boson.CancelChildrenOnCancel())
		if err != nil {
			return 0, err
		}
		for j, h := range hs {
			if j != i {
				_ = h.Cancel(ctx, "not needed")
			}
		}
		return v, nil
	})
	_ = worker.Start(ctx)
	defer worker.Shutdown(ctx)

	h, _ := boson.Spawn(ctx, client, FirstOf, []int{7, 8, 9})
	out, err := h.Wait(ctx)
	fmt.Println(out, err)
	// Output: 49 <nil>
}
