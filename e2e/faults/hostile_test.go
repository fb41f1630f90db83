package faults_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// hostileBackends returns an opener of a fresh backend of every kind:
// mem and the durable ones on the machine's servers. A durable backend
// whose server does not answer skips its subtest, or fails it when
// BOSON_TEST_REQUIRE requires the service.
func hostileBackends() map[string]func(t *testing.T) core.QueueBackend {
	bs := map[string]func(t *testing.T) core.QueueBackend{
		"mem": func(t *testing.T) core.QueueBackend {
			m := mem.New(mem.Options{Logger: quiet})
			t.Cleanup(func() { _ = m.Close() })
			return m
		},
	}
	for _, s := range sharedStores() {
		bs[s.Name] = func(t *testing.T) core.QueueBackend { return s.Open(t, s.URL, s.Locator(t), true) }
	}
	return bs
}

// hostileNames try to leave the name's place in SQL, in a Redis key or in
// a NATS subject.
var hostileNames = []string{
	"x'; DROP TABLE jobs; --", `x"; DROP SCHEMA public CASCADE; --`, "q) OR 1=1 --", "{boson}:jobs", "q}{x",
	"q\r\nFLUSHALL\r\n", "*", "a.*", "a.>", ">", "a.b", "q b", "q\x00", "q\xff", "ü", "-leading", "_leading",
	strings.Repeat("a", core.MaxNameLength+1), "",
}

func TestHostileInput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for name, open := range hostileBackends() {
		t.Run(name, func(t *testing.T) {
			b := open(t)
			// A job that is already there must survive everything below.
			keep, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "hostile", Task: "keep", Payload: []byte(`{"v":1}`)}})
			if err != nil {
				t.Fatal(err)
			}
			before := total(ctx, t, b)
			refused := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, core.ErrInvalidArgument) {
					t.Errorf("%s: got %v, want an error wrapping ErrInvalidArgument", what, err)
				}
			}
			enq := func(what string, reqs ...core.EnqueueRequest) {
				t.Helper()
				_, err := b.Enqueue(ctx, reqs)
				refused(what, err)
			}
			ok := core.EnqueueRequest{Queue: "hostile", Task: "t", Payload: []byte(`{}`)}
			for _, n := range hostileNames {
				r := ok
				r.Queue = n
				if n != "" { // an empty queue means the default one
					enq("queue "+n, r)
				}
				r = ok
				r.Task = n
				enq("task "+n, r)
				// A bad item anywhere in a batch refuses the whole batch.
				enq("batch with task "+n, ok, r, ok)
				_, err := b.Claim(ctx, core.ClaimRequest{Queue: n, WorkerID: "w", Limit: 1, LeaseTTL: time.Minute})
				if n != "" {
					refused("claim queue "+n, err)
				}
				_, err = b.ListJobs(ctx, core.JobFilter{Queue: n})
				if n != "" {
					refused("list queue "+n, err)
				}
			}
			big := ok
			big.Payload = make([]byte, core.DefaultLimits.MaxPayloadBytes+1)
			enq("oversized payload", big)
			hdr := ok
			hdr.Headers = map[string]string{"k": strings.Repeat("v", core.DefaultLimits.MaxHeaderBytes)}
			enq("oversized headers", hdr)
			bad := ok
			bad.Headers = map[string]string{"k\xff": "v"}
			enq("invalid UTF-8 header key", bad)
			bad.Headers = map[string]string{"k": "\xc3\x28"}
			enq("invalid UTF-8 header value", bad)
			bad = ok
			bad.IdempotencyKey = "key\xff"
			enq("invalid UTF-8 idempotency key", bad)
			bad = ok
			bad.IdempotencyKey = strings.Repeat("k", core.MaxIdempotencyKeyLength+1)
			enq("oversized idempotency key", bad)
			batch := make([]core.EnqueueRequest, core.DefaultLimits.MaxBatch+1)
			for i := range batch {
				batch[i] = ok
			}
			enq("huge batch", batch...)
			enq("empty batch")
			neg := ok
			neg.Retry = core.RetryPolicy{Initial: -time.Second}
			enq("negative retry delay", neg)
			neg = ok
			neg.Retry = core.RetryPolicy{Initial: time.Second, Factor: -2}
			enq("negative retry factor", neg)
			neg = ok
			neg.Cancel = core.CancellationPolicy{MaxDuration: -time.Hour}
			enq("negative max duration", neg)
			neg = ok
			neg.MaxAttempts = -1
			enq("negative max attempts", neg)
			neg = ok
			neg.Priority = 1 << 30
			enq("absurd priority", neg)
			neg = ok
			neg.RunAt = time.Date(20000, 1, 1, 0, 0, 0, 0, time.UTC)
			enq("run at in the year 20000", neg)
			_, err = b.Claim(ctx, core.ClaimRequest{Queue: "hostile", WorkerID: "w", Limit: 1, LeaseTTL: -time.Second})
			refused("negative lease", err)
			_, err = b.Claim(ctx, core.ClaimRequest{Queue: "hostile", WorkerID: "w", Limit: -5, LeaseTTL: time.Second})
			refused("negative claim limit", err)
			_, err = b.Claim(ctx, core.ClaimRequest{Queue: "hostile", WorkerID: "w", Limit: 1 << 30, LeaseTTL: time.Second})
			refused("huge claim limit", err)
			_, err = b.ListJobs(ctx, core.JobFilter{Limit: core.MaxPageSize + 1})
			refused("huge page", err)
			_, err = b.Heartbeat(ctx, core.Lease{JobID: keep[0].Job.ID, Token: 1, WorkerID: "w"}, -time.Second)
			refused("negative heartbeat ttl", err)

			// Binary payloads that are not UTF-8 are data, not an attack:
			// accepted and returned byte for byte, or refused cleanly.
			bin := ok
			bin.Payload = []byte("\xff\xfe\x00\xc3\x28")
			res, err := b.Enqueue(ctx, []core.EnqueueRequest{bin})
			extra := 0
			switch {
			case err == nil:
				extra = 1
				j, err := b.GetJob(ctx, res[0].Job.ID)
				if err != nil || !bytes.Equal(j.Payload, bin.Payload) {
					t.Errorf("binary payload came back as %q (%v)", j.Payload, err)
				}
			default:
				refused("binary payload", err)
			}

			if after := total(ctx, t, b); after != before+extra {
				t.Errorf("jobs before %d, after %d (want %d)", before, after, before+extra)
			}
			j, err := b.GetJob(ctx, keep[0].Job.ID)
			if err != nil || j.State != core.StateQueued || string(j.Payload) != `{"v":1}` {
				t.Errorf("the job stored first is now %+v (%v)", j, err)
			}
		})
	}
}

// TestHostileSpawn sends hostile task and queue names through the
// runtime's client too: refused before anything reaches the store.
func TestHostileSpawn(t *testing.T) {
	ctx := context.Background()
	b := mem.New(mem.Options{Logger: quiet})
	defer b.Close()
	c, err := boson.NewClient(b, boson.ClientOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range hostileNames {
		if _, err := boson.Spawn(ctx, c, boson.NewTask[int, int](n), 1); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("task %q: %v", n, err)
		}
		if n == "" {
			continue
		}
		if _, err := boson.Spawn(ctx, c, faultTask, In{}, boson.WithQueue(n)); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("queue %q: %v", n, err)
		}
	}
	if _, err := boson.Spawn(ctx, c, faultTask, In{}, boson.WithDelay(-time.Hour)); err != nil && !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("negative delay: %v", err)
	}
	if _, err := boson.Spawn(ctx, c, faultTask, In{}, boson.WithHeader("k", "\xff")); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("invalid UTF-8 header: %v", err)
	}
}

func total(ctx context.Context, t *testing.T, b core.QueueBackend) int {
	t.Helper()
	counts, err := b.CountJobs(ctx, core.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range counts {
		n += int(c)
	}
	return n
}
