package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/cmd/soak"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// JetStream is the raw JetStream loop: a fresh work-queue stream (file
// storage, one replica) per run, messages published asynchronously, then
// Loops pull loops that Fetch Fetch messages and Ack each.
type JetStream struct {
	URL      string
	Loops    int
	Fetch    int
	PerCall  int
	Spawners int
}

func (j *JetStream) name() string {
	return "JetStream, nats.go " + moduleVersion("github.com/nats-io/nats.go")
}

func (j *JetStream) settings() []soak.Setting {
	return []soak.Setting{
		{Name: "stream", Value: "WorkQueuePolicy, FileStorage, 1 replica"},
		{Name: "publish", Value: fmt.Sprintf("PublishAsync, %d in flight per goroutine, %d goroutines", j.PerCall, j.Spawners)},
		{Name: "consume", Value: fmt.Sprintf("%d loops of Fetch(%d) on one durable pull consumer, Ack per message (AckExplicit)", j.Loops, j.Fetch)},
		{Name: "drain ends", Value: "when the stream holds no message (every ack applied)"},
	}
}

// Batch publishes n messages to a fresh stream, then drains them with
// fetch-and-ack loops until the stream is empty.
func (j *JetStream) Batch(ctx context.Context, n int) (BatchFigures, error) {
	nc, err := nats.Connect(j.URL)
	if err != nil {
		return BatchFigures{}, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return BatchFigures{}, err
	}
	name := "PEERS_" + suffix()
	subject := "peers." + name
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Replicas: 1})
	if err != nil {
		return BatchFigures{}, fmt.Errorf("jetstream: %w", err)
	}
	defer func() { _ = js.DeleteStream(context.Background(), name) }()
	payload := []byte(`{"seq":0}`)
	spawn, err := spawnAll(ctx, n, j.PerCall, j.Spawners, func(ctx context.Context, _, k int) error {
		for range k {
			if _, err := js.PublishAsync(subject, payload); err != nil {
				return err
			}
		}
		select {
		case <-js.PublishAsyncComplete():
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if err != nil {
		return BatchFigures{}, fmt.Errorf("jetstream publish: %w", err)
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "peers", AckPolicy: jetstream.AckExplicitPolicy,
		MaxAckPending: j.Loops * j.Fetch * 2})
	if err != nil {
		return BatchFigures{}, fmt.Errorf("jetstream consumer: %w", err)
	}
	var acked atomic.Int64
	allAcked := make(chan struct{})
	errs := make(chan error, j.Loops)
	start := time.Now()
	for range j.Loops {
		go func() {
			for acked.Load() < int64(n) && ctx.Err() == nil {
				batch, err := cons.Fetch(j.Fetch, jetstream.FetchMaxWait(100*time.Millisecond))
				if err != nil {
					errs <- err
					return
				}
				for msg := range batch.Messages() {
					if err := msg.Ack(); err != nil {
						errs <- err
						return
					}
					if acked.Add(1) == int64(n) {
						close(allAcked)
					}
				}
				if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
					errs <- err
					return
				}
			}
			errs <- ctx.Err()
		}()
	}
	var all []error
	for loops := j.Loops; ; {
		select {
		case err := <-errs:
			all = append(all, err)
			loops--
			if loops > 0 {
				continue
			}
		case <-allAcked:
		}
		break
	}
	if err := errors.Join(all...); err != nil {
		return BatchFigures{}, fmt.Errorf("jetstream consume: %w", err)
	}
	// The drain ends when the server applied the last ack: the work queue
	// then holds nothing.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		info, err := stream.Info(ctx)
		if err != nil {
			return BatchFigures{}, err
		}
		if info.State.Msgs == 0 {
			break
		}
		if time.Now().After(deadline) {
			return BatchFigures{}, errors.New("jetstream: stream still holds " + strconv.FormatUint(info.State.Msgs, 10) + " messages a minute after the last ack")
		}
	}
	drain := time.Since(start)
	for range j.Loops - len(all) {
		if err := <-errs; err != nil {
			return BatchFigures{}, fmt.Errorf("jetstream consume: %w", err)
		}
	}
	return BatchFigures{Spawn: rate(n, spawn), Drain: rate(n, drain)}, nil
}
