package core

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestQueueConfigsMatch(t *testing.T) {
	base := QueueConfig{Queue: "q", RetentionTTL: time.Hour, CleanupLimit: 5, MaxRunning: 2}
	paused := base
	paused.Paused = true
	if !QueueConfigsMatch(base, paused) {
		t.Fatal("a paused copy should match: Paused is operational state")
	}
	for name, mut := range map[string]func(*QueueConfig){
		"queue":     func(c *QueueConfig) { c.Queue = "r" },
		"retention": func(c *QueueConfig) { c.RetentionTTL = time.Minute },
		"cleanup":   func(c *QueueConfig) { c.CleanupLimit = 6 },
		"running":   func(c *QueueConfig) { c.MaxRunning = 0 },
	} {
		other := base
		mut(&other)
		if QueueConfigsMatch(base, other) {
			t.Fatalf("configs differing in %s match", name)
		}
	}
	if got := DeclaredConfig(QueueConfig{Queue: "q", Paused: true}, base); !got.Paused || !QueueConfigsMatch(got, base) {
		t.Fatalf("DeclaredConfig resumed or changed the queue: %+v", got)
	}
	if got := DeclaredConfig(QueueConfig{Queue: "q"}, paused); !got.Paused {
		t.Fatalf("DeclaredConfig dropped the asked pause: %+v", got)
	}
}

func TestQueueDeclareErrors(t *testing.T) {
	err := QueueConflict(QueueConfig{Queue: "q"}, QueueConfig{Queue: "q", CleanupLimit: 1})
	if !errors.Is(err, ErrQueueConflict) || !errors.Is(err, ErrIdempotencyConflict) {
		t.Fatalf("QueueConflict = %v, want ErrQueueConflict and ErrIdempotencyConflict", err)
	}
	if !errors.Is(ErrQueueNotDeclared, ErrNotFound) {
		t.Fatal("ErrQueueNotDeclared does not wrap ErrNotFound")
	}
	if _, _, err := CreateQueue(context.Background(), nil, QueueConfig{Queue: "q"}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("CreateQueue on a store without QueueDeclarer = %v", err)
	}
	if _, err := QueueDeclared(context.Background(), nil, "q"); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("QueueDeclared on a store without QueueDeclarer = %v", err)
	}
}
