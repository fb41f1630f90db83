package natsq_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkPrimitives measures, on the embedded current server with one
// file-backed replica, the JetStream operations a queue on NATS is built
// from, one at a time (each op/s figure is one operation's round trip,
// with the server's CPU in this process):
//
//   - Publish: a publish acknowledged by the stream;
//   - PublishCAS: the same with Nats-Expected-Last-Subject-Sequence, the
//     compare-and-set of one key (each op rewrites the key it read);
//   - DirectGet: the last message of a subject, read by direct get;
//   - AtomicBatchN: an atomic batch of N messages on N subjects, each
//     with its own expected subject sequence (server 2.12 and later);
//   - FetchAck100: a pull fetch of 100 messages and their acks (ns/op is
//     per message).
//
// Run it alone: flock /tmp/boson-bench.lock go test -run '^$' -bench Primitives ./backend-nats
func BenchmarkPrimitives(b *testing.B) {
	ctx := context.Background()
	nc := connect(b, embeddedURL(b))
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PRIM", Subjects: []string{"prim.>"}, Storage: jetstream.FileStorage,
		MaxMsgsPerSubject: 1, AllowDirect: true, AllowAtomicPublish: true})
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 300)
	b.Run("Publish", func(b *testing.B) {
		for i := range b.N {
			if _, err := js.Publish(ctx, "prim.pub."+strconv.Itoa(i%1000), payload); err != nil {
				b.Fatal(err)
			}
		}
	})
	round := 0
	b.Run("PublishCAS", func(b *testing.B) {
		round++
		key := "prim.cas." + strconv.Itoa(round)
		var rev uint64
		for range b.N {
			ack, err := js.Publish(ctx, key, payload, jetstream.WithExpectLastSequencePerSubject(rev))
			if err != nil {
				b.Fatal(err)
			}
			rev = ack.Sequence
		}
	})
	b.Run("DirectGet", func(b *testing.B) {
		for range b.N {
			if _, err := stream.GetLastMsgForSubject(ctx, "prim.cas.1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("AtomicBatch%d", n), func(b *testing.B) {
			round++
			revs := make([]uint64, n)
			for i := range b.N {
				id := strconv.Itoa(round) + "-" + strconv.Itoa(i)
				for k := range n {
					m := &nats.Msg{Subject: fmt.Sprintf("prim.batch%d.%d.%d", n, round, k), Data: payload, Header: nats.Header{}}
					m.Header.Set("Nats-Batch-Id", id)
					m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(k+1))
					m.Header.Set("Nats-Expected-Last-Subject-Sequence", strconv.FormatUint(revs[k], 10))
					if k < n-1 {
						if err := nc.PublishMsg(m); err != nil {
							b.Fatal(err)
						}
						continue
					}
					m.Header.Set("Nats-Batch-Commit", "1")
					ack, err := js.PublishMsg(ctx, m)
					if err != nil {
						b.Fatal(err)
					}
					for j := range revs {
						revs[j] = ack.Sequence - uint64(n-1-j)
					}
				}
			}
		})
	}
	b.Run("FetchAck100", func(b *testing.B) {
		ws, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PRIMWQ", Subjects: []string{"primwq"}, Storage: jetstream.FileStorage,
			Retention: jetstream.WorkQueuePolicy})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < b.N; i++ {
			if _, err := js.PublishAsync("primwq", payload); err != nil {
				b.Fatal(err)
			}
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-time.After(time.Minute):
			b.Fatal("publish did not complete")
		}
		cons, err := ws.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "d", AckPolicy: jetstream.AckExplicitPolicy})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for got := 0; got < b.N; {
			batch, err := cons.Fetch(min(100, b.N-got), jetstream.FetchMaxWait(time.Second))
			if err != nil {
				b.Fatal(err)
			}
			for m := range batch.Messages() {
				if err := m.Ack(); err != nil {
					b.Fatal(err)
				}
				got++
			}
		}
		if err := nc.Flush(); err != nil {
			b.Fatal(err)
		}
	})
}
