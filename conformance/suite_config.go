package conformance

import (
	"math"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testConfig: task and queue configs round-trip and are validated.
func testConfig(t *testing.T, h Harness) {
	cases(t, h, map[string]func(e *env){
		"TaskRoundTrip":     configTaskRoundTrip,
		"TaskNotFound":      configTaskNotFound,
		"TaskValidation":    configTaskValidation,
		"QueueRoundTrip":    configQueueRoundTrip,
		"QueueDefault":      configQueueDefault,
		"QueueConfigListed": configQueueListed,
	})
}

func configTaskRoundTrip(e *env) {
	c := core.TaskConfig{
		Task: "send", MaxInFlight: 10, MaxEnqueuePerSecond: 100, Queue: "mail", Priority: -5, MaxAttempts: 7,
		Retry: core.RetryPolicy{Initial: 250 * time.Millisecond, Factor: 1.5, Max: time.Minute, Jitter: 0.1},
	}
	e.putTaskConfig(c)
	got, err := e.b.GetTaskConfig(e.ctx, "send")
	if err != nil {
		e.t.Fatalf("GetTaskConfig: %v", err)
	}
	if d := diff(c, got); d != "" {
		e.t.Fatalf("task config round trip: %s", d)
	}
	c2 := core.TaskConfig{Task: "send", MaxInFlight: 1}
	e.putTaskConfig(c2)
	got, err = e.b.GetTaskConfig(e.ctx, "send")
	if err != nil {
		e.t.Fatalf("GetTaskConfig: %v", err)
	}
	if d := diff(c2, got); d != "" {
		e.t.Fatalf("replaced task config: %s", d)
	}
}

func configTaskNotFound(e *env) {
	e.putTaskConfig(core.TaskConfig{Task: "known"})
	_, err := e.b.GetTaskConfig(e.ctx, "unknown")
	requireErr(e.t, err, core.ErrNotFound, "GetTaskConfig of an unknown task")
}

func configTaskValidation(e *env) {
	bad := map[string]core.TaskConfig{
		"empty task":           {},
		"hostile task":         {Task: "t;--"},
		"negative in flight":   {Task: "t", MaxInFlight: -1},
		"negative per second":  {Task: "t", MaxEnqueuePerSecond: -1},
		"hostile queue":        {Task: "t", Queue: "q.>"},
		"priority too high":    {Task: "t", Priority: core.MaxPriority + 1},
		"negative attempts":    {Task: "t", MaxAttempts: -1},
		"negative retry delay": {Task: "t", Retry: core.RetryPolicy{Initial: -1}},
		"NaN retry factor":     {Task: "t", Retry: core.RetryPolicy{Factor: math.NaN()}},
		"retry jitter above 1": {Task: "t", Retry: core.RetryPolicy{Jitter: 2}},
	}
	for _, name := range sortedKeys(bad) {
		requireErr(e.t, e.b.PutTaskConfig(e.ctx, bad[name]), core.ErrInvalidArgument, "PutTaskConfig with "+name)
	}
	_, err := e.b.GetTaskConfig(e.ctx, "t")
	requireErr(e.t, err, core.ErrNotFound, "GetTaskConfig after only invalid puts")
}

func configQueueRoundTrip(e *env) {
	c := core.QueueConfig{Queue: "q", Paused: true, RetentionTTL: 36 * time.Hour, CleanupLimit: 250}
	if err := e.b.PutQueueConfig(e.ctx, c); err != nil {
		e.t.Fatalf("PutQueueConfig: %v", err)
	}
	got, err := e.b.GetQueueConfig(e.ctx, "q")
	if err != nil {
		e.t.Fatalf("GetQueueConfig: %v", err)
	}
	if d := diff(c, got); d != "" {
		e.t.Fatalf("queue config round trip: %s", d)
	}
	c2 := core.QueueConfig{Queue: "q"}
	if err := e.b.PutQueueConfig(e.ctx, c2); err != nil {
		e.t.Fatalf("PutQueueConfig: %v", err)
	}
	got, _ = e.b.GetQueueConfig(e.ctx, "q")
	if d := diff(c2, got); d != "" {
		e.t.Fatalf("replaced queue config: %s", d)
	}
}

func configQueueDefault(e *env) {
	got, err := e.b.GetQueueConfig(e.ctx, "never")
	if err != nil {
		e.t.Fatalf("GetQueueConfig of a queue without a config: %v", err)
	}
	if d := diff(core.QueueConfig{Queue: "never"}, got); d != "" {
		e.t.Fatalf("default queue config: %s", d)
	}
}

func configQueueListed(e *env) {
	if err := e.b.PutQueueConfig(e.ctx, core.QueueConfig{Queue: "empty"}); err != nil {
		e.t.Fatalf("PutQueueConfig: %v", err)
	}
	qs, err := e.b.ListQueues(e.ctx)
	if err != nil {
		e.t.Fatalf("ListQueues: %v", err)
	}
	if len(qs) != 1 || qs[0].Queue != "empty" || qs[0].Paused {
		e.t.Fatalf("ListQueues = %+v, want the configured queue, not paused", qs)
	}
}
