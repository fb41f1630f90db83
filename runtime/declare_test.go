package boson_test

import (
	"errors"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

func strictClient(t *testing.T, b core.QueueBackend, ttl time.Duration) *boson.Client {
	t.Helper()
	c, err := boson.NewClient(b, boson.ClientOptions{Logger: quiet, StrictQueues: true, DeclaredQueueTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCreateQueueThroughClient(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	cfg := core.QueueConfig{Queue: "mail", RetentionTTL: time.Hour}
	got, created, err := e.client.CreateQueue(ctx, cfg)
	if err != nil || !created || got != cfg {
		t.Fatalf("first CreateQueue = %+v, %v, %v", got, created, err)
	}
	got, created, err = e.client.CreateQueue(ctx, cfg)
	if err != nil || created || got != cfg {
		t.Fatalf("repeat CreateQueue = %+v, %v, %v", got, created, err)
	}
	other := cfg
	other.RetentionTTL = time.Minute
	got, _, err = e.client.CreateQueue(ctx, other)
	if !errors.Is(err, boson.ErrQueueConflict) || !errors.Is(err, core.ErrIdempotencyConflict) || got != cfg {
		t.Fatalf("conflicting CreateQueue = %+v, %v; want the stored config and ErrQueueConflict", got, err)
	}
	if ok, err := e.client.QueueDeclared(ctx, "mail"); err != nil || !ok {
		t.Fatalf("QueueDeclared(mail) = %v, %v", ok, err)
	}
	if _, _, err := e.client.CreateQueue(ctx, core.QueueConfig{Queue: "bad", CleanupLimit: -1}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("invalid CreateQueue: %v", err)
	}
}

func TestStrictClientRefusesUndeclaredQueues(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	strict := strictClient(t, e.b, time.Hour)

	_, err := boson.Spawn(ctx, strict, addTask, addIn{1, 2}, boson.WithQueue("mial"))
	if !errors.Is(err, boson.ErrQueueNotDeclared) || !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("spawn to an undeclared queue: %v, want ErrQueueNotDeclared", err)
	}
	if _, err := boson.Spawn(ctx, strict, addTask, addIn{1, 2}); !errors.Is(err, boson.ErrQueueNotDeclared) {
		t.Fatalf("spawn to the undeclared default queue: %v", err)
	}
	// Declared by another client: usable at once, no negative answer is kept.
	if _, _, err := e.client.CreateQueue(ctx, core.QueueConfig{Queue: "mail"}); err != nil {
		t.Fatal(err)
	}
	h, err := boson.Spawn(ctx, strict, addTask, addIn{1, 2}, boson.WithQueue("mail"))
	if err != nil {
		t.Fatalf("spawn to a declared queue: %v", err)
	}
	// A batch with one undeclared queue stores nothing.
	_, err = strict.SpawnRequests(ctx, addTask.Request(addIn{1, 1}, boson.WithQueue("mail")), addTask.Request(addIn{2, 2}, boson.WithQueue("mial")))
	var be *core.BatchError
	if !errors.Is(err, boson.ErrQueueNotDeclared) || !errors.As(err, &be) || be.Index != 1 {
		t.Fatalf("batch with an undeclared queue: %v, want ErrQueueNotDeclared at index 1", err)
	}
	_, err = boson.SpawnBatch(ctx, strict, addTask, []addIn{{1, 1}, {2, 2}}, boson.WithQueue("mial"))
	if !errors.Is(err, boson.ErrQueueNotDeclared) {
		t.Fatalf("SpawnBatch to an undeclared queue: %v", err)
	}
	// The transactional form is refused before the store sees the tx.
	_, err = strict.SpawnRequestsTx(ctx, struct{}{}, addTask.Request(addIn{1, 1}, boson.WithQueue("mial")))
	if !errors.Is(err, boson.ErrQueueNotDeclared) {
		t.Fatalf("SpawnRequestsTx to an undeclared queue: %v", err)
	}
	counts, err := e.b.CountJobs(ctx, core.JobFilter{})
	if err != nil || counts[core.StateQueued] != 1 {
		t.Fatalf("jobs stored = %v, %v; want only %s", counts, err, h.ID())
	}
	// A non-strict client keeps spawning anywhere.
	if _, err := boson.Spawn(ctx, e.client, addTask, addIn{1, 2}, boson.WithQueue("mial")); err != nil {
		t.Fatalf("non-strict spawn to an undeclared queue: %v", err)
	}
}

func TestStrictClientAfterDeleteQueue(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	strict := strictClient(t, e.b, time.Hour)
	if _, _, err := strict.CreateQueue(ctx, core.QueueConfig{Queue: "mail"}); err != nil {
		t.Fatal(err)
	}
	if _, err := boson.Spawn(ctx, strict, addTask, addIn{1, 2}, boson.WithQueue("mail")); err != nil {
		t.Fatal(err)
	}
	n, err := strict.DeleteQueue(ctx, "mail")
	if err != nil || n != 1 {
		t.Fatalf("DeleteQueue = %d, %v; want 1 job deleted", n, err)
	}
	// Deleted through this client: forgotten at once, despite the hour.
	if _, err := boson.Spawn(ctx, strict, addTask, addIn{1, 2}, boson.WithQueue("mail")); !errors.Is(err, boson.ErrQueueNotDeclared) {
		t.Fatalf("spawn after DeleteQueue: %v", err)
	}

	// Deleted by someone else: a client that checks on every spawn sees it
	// at the next spawn.
	every := strictClient(t, e.b, -1)
	if _, _, err := every.CreateQueue(ctx, core.QueueConfig{Queue: "mail"}); err != nil {
		t.Fatal(err)
	}
	if _, err := boson.Spawn(ctx, every, addTask, addIn{1, 2}, boson.WithQueue("mail")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.DeleteQueue(ctx, "mail"); err != nil {
		t.Fatal(err)
	}
	if _, err := boson.Spawn(ctx, every, addTask, addIn{1, 2}, boson.WithQueue("mail")); !errors.Is(err, boson.ErrQueueNotDeclared) {
		t.Fatalf("spawn after another client deleted the queue: %v", err)
	}
}

func TestStrictClientNeedsDeclarer(t *testing.T) {
	b := mem.New(mem.Options{Logger: quiet})
	t.Cleanup(func() { _ = b.Close() })
	plain := struct{ core.QueueBackend }{b} // hides core.QueueDeclarer
	if _, err := boson.NewClient(plain, boson.ClientOptions{StrictQueues: true}); !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("strict client over a store without declarations: %v", err)
	}
	c, err := boson.NewClient(plain, boson.ClientOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.CreateQueue(ctxT(t), core.QueueConfig{Queue: "q"}); !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("CreateQueue over a store without declarations: %v", err)
	}
}
