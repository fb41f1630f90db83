package main

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/cmd/soak"
	"github.com/hibiken/asynq"
)

// Asynq is the asynq peer on Redis: a fresh queue per run, tasks enqueued
// one per call (asynq has no batch enqueue), worked by one server with
// Concurrency handlers; the queue is deleted after the run.
type Asynq struct {
	URL         string
	Concurrency int
	Spawners    int
}

func (a *Asynq) name() string { return "asynq " + moduleVersion("github.com/hibiken/asynq") }

func (a *Asynq) settings() []soak.Setting {
	return []soak.Setting{
		{Name: "Concurrency", Value: strconv.Itoa(a.Concurrency)},
		{Name: "enqueue", Value: fmt.Sprintf("Client.EnqueueContext, one task per call from %d goroutines", a.Spawners)},
		{Name: "drain ends", Value: "when the last handler returns"},
	}
}

// Batch enqueues n no-op tasks on a fresh queue, then starts a server and
// times the drain to the last handler's return.
func (a *Asynq) Batch(ctx context.Context, n int) (BatchFigures, error) {
	opt, err := asynq.ParseRedisURI(a.URL)
	if err != nil {
		return BatchFigures{}, fmt.Errorf("asynq: %w", err)
	}
	queue := "peers-" + suffix()
	client := asynq.NewClient(opt)
	defer client.Close()
	inspector := asynq.NewInspector(opt)
	defer inspector.Close()
	defer func() { _ = inspector.DeleteQueue(queue, true) }()
	payload := []byte(`{"seq":0}`)
	spawn, err := spawnAll(ctx, n, 1, a.Spawners, func(ctx context.Context, _, _ int) error {
		_, err := client.EnqueueContext(ctx, asynq.NewTask("peers_noop", payload), asynq.Queue(queue), asynq.MaxRetry(0))
		return err
	})
	if err != nil {
		return BatchFigures{}, fmt.Errorf("asynq enqueue: %w", err)
	}
	var done atomic.Int64
	finished := make(chan struct{})
	mux := asynq.NewServeMux()
	mux.HandleFunc("peers_noop", func(context.Context, *asynq.Task) error {
		if done.Add(1) == int64(n) {
			close(finished)
		}
		return nil
	})
	srv := asynq.NewServer(opt, asynq.Config{Concurrency: a.Concurrency, Queues: map[string]int{queue: 1}, LogLevel: asynq.FatalLevel})
	start := time.Now()
	if err := srv.Start(mux); err != nil {
		return BatchFigures{}, fmt.Errorf("asynq server: %w", err)
	}
	defer srv.Shutdown()
	if err := awaitClosed(ctx, finished, &done, n); err != nil {
		return BatchFigures{}, fmt.Errorf("asynq: %w", err)
	}
	return BatchFigures{Spawn: rate(n, spawn), Drain: rate(n, time.Since(start))}, nil
}

// awaitClosed waits for finished, failing when done stops moving for a
// minute.
func awaitClosed(ctx context.Context, finished <-chan struct{}, done *atomic.Int64, n int) error {
	last, at := int64(-1), time.Now()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-finished:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if d := done.Load(); d != last {
				last, at = d, time.Now()
			} else if time.Since(at) > time.Minute {
				return fmt.Errorf("drain stalled at %d of %d", d, n)
			}
		}
	}
}
