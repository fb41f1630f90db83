package boson_test

import (
	"errors"
	"testing"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// TestClientMetrics: every request that reaches the backend is counted
// once, under its resolved queue and task, by outcome; each backend call
// is timed once per queue and task it carried.
func TestClientMetrics(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	c := e.client
	other := boson.NewTask[int, int]("other")
	if err := c.PutTaskConfig(ctx, core.TaskConfig{Task: "other", Queue: "side", MaxInFlight: 2}); err != nil {
		t.Fatal(err)
	}
	// Two new jobs and a reuse of the first under its key.
	for _, in := range []addIn{{1, 2}, {1, 2}} {
		if _, err := boson.Spawn(ctx, c, addTask, in, boson.WithIdempotencyKey("k")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := boson.Spawn(ctx, c, addTask, addIn{5, 5}); err != nil {
		t.Fatal(err)
	}
	// A conflict: the key holds another request.
	if _, err := boson.Spawn(ctx, c, addTask, addIn{9, 9}, boson.WithIdempotencyKey("k")); !errors.Is(err, core.ErrIdempotencyConflict) {
		t.Fatalf("conflict: %v", err)
	}
	// The task config sends "other" to queue side and caps it at two.
	if _, err := boson.SpawnBatch(ctx, c, other, []int{1, 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := boson.Spawn(ctx, c, other, 3); !errors.Is(err, core.ErrRateLimited) {
		t.Fatalf("rate limited: %v", err)
	}
	// A mixed batch refused for its second request: only that one counts.
	_, err := c.SpawnRequests(ctx, addTask.Request(addIn{7, 7}), addTask.Request(addIn{8, 8}, boson.WithIdempotencyKey("k")))
	if !errors.Is(err, core.ErrIdempotencyConflict) {
		t.Fatalf("batch conflict: %v", err)
	}
	// Refused before the backend: not counted.
	if _, err := boson.Spawn(ctx, c, boson.NewTask[int, int]("bad name"), 1); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatal(err)
	}

	m := c.Metrics()
	add := m.Tasks[boson.QueueTask{Queue: "default", Task: "add"}]
	side := m.Tasks[boson.QueueTask{Queue: "side", Task: "other"}]
	if len(m.Tasks) != 2 {
		t.Fatalf("tasks %v", m.Tasks)
	}
	if add.Spawned != 2 || add.Reused != 1 || add.Conflicts != 2 || add.RateLimited != 0 || add.Errors != 0 {
		t.Errorf("add: %+v", add)
	}
	if side.Spawned != 2 || side.RateLimited != 1 || side.Reused+side.Conflicts+side.Errors != 0 {
		t.Errorf("other: %+v", side)
	}
	calls := func(c boson.ClientCounters) (n int64) {
		for _, v := range c.SpawnHistogram {
			n += v
		}
		return n
	}
	// add: four single spawns and one batch; other: one batch and one spawn.
	if calls(add) != 5 || calls(side) != 2 || add.SpawnTime <= 0 || side.SpawnTime <= 0 {
		t.Errorf("timed calls: add %d (%v), other %d (%v)", calls(add), add.SpawnTime, calls(side), side.SpawnTime)
	}
	if m.Total.Spawned != 4 || m.Total.Conflicts != 2 || calls(m.Total) != 7 {
		t.Errorf("total %+v", m.Total)
	}
	// A batch over two tasks is timed once for each.
	third := boson.NewTask[int, int]("third")
	if _, err := c.SpawnRequests(ctx, addTask.Request(addIn{}), third.Request(1), addTask.Request(addIn{}), third.Request(2)); err != nil {
		t.Fatal(err)
	}
	m = c.Metrics()
	add, thirds := m.Tasks[boson.QueueTask{Queue: "default", Task: "add"}], m.Tasks[boson.QueueTask{Queue: "default", Task: "third"}]
	if add.Spawned != 4 || calls(add) != 6 || thirds.Spawned != 2 || calls(thirds) != 1 {
		t.Errorf("mixed batch: add %+v, third %+v", add, thirds)
	}
}
