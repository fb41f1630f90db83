package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// runCeiling measures the store without the runtime: a batched enqueue of
// cfg.Jobs jobs, then cfg.CeilingLoops loops that claim cfg.CeilingBatch jobs
// and complete them in one call until every job is done, then single-job
// enqueue-claim-complete round trips.
//
// On NATS the ceiling is JetStream itself: after the store's own loops, the
// same number of messages is published to a scratch work-queue stream and
// fetched and acknowledged by cfg.CeilingLoops pull loops of
// cfg.CeilingBatch (see jetStreamCeiling), and those two rates are the
// ceiling's spawn and drain, so that every other scenario's fraction of the
// ceiling is its fraction of raw JetStream. The store's own enqueue and
// claim+complete rates are then printed on the progress output.
func (e *env) runCeiling(ctx context.Context) (Result, error) {
	res, err := e.runStoreCeiling(ctx)
	if err != nil {
		return res, err
	}
	c, ok := e.raw.(interface{ Conn() *nats.Conn })
	if !ok {
		return res, nil
	}
	pub, drain, err := e.jetStreamCeiling(ctx, c.Conn())
	if err != nil {
		return res, fmt.Errorf("raw jetstream loop: %w", err)
	}
	if e.prog.w != nil {
		fmt.Fprintf(e.prog.w, "store alone: enqueue %s/s, claim+complete %s/s; raw jetstream: publish %s/s, fetch+ack %s/s\n",
			human(res.SpawnPerSec), human(res.DrainPerSec), human(rate(e.cfg.Jobs, pub)), human(rate(e.cfg.Jobs, drain)))
	}
	res.SpawnPerSec, res.DrainPerSec = rate(e.cfg.Jobs, pub), rate(e.cfg.Jobs, drain)
	return res, nil
}

// jetStreamCeiling is the raw JetStream loop of the NATS ceiling. It
// creates a file-backed work-queue stream of one replica on a scratch
// subject, publishes cfg.Jobs messages of the benchmark's payload from
// cfg.Spawners goroutines (asynchronously, waiting for the acknowledgements
// of each cfg.SpawnBatch), then drains them with cfg.CeilingLoops loops that
// fetch cfg.CeilingBatch messages from one durable pull consumer and ack
// each, and deletes the stream. It returns the publish and drain times.
func (e *env) jetStreamCeiling(ctx context.Context, nc *nats.Conn) (pub, drain time.Duration, err error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, 0, err
	}
	id := strings.ToLower(core.NewID(time.Now()))[18:]
	name, subject := "BOSON_BENCH_RAW_"+id, "boson-bench-raw."+id
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Replicas: 1})
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if derr := js.DeleteStream(dctx, name); derr != nil && err == nil {
			err = derr
		}
	}()
	n := e.cfg.Jobs
	payload := []byte(`{"seq":0}`)
	var published atomic.Int64
	stop := e.prog.track("jetstream publish", int64(n), published.Load)
	start := time.Now()
	errc := make(chan error, e.cfg.Spawners)
	per := (n + e.cfg.Spawners - 1) / e.cfg.Spawners
	for s := range e.cfg.Spawners {
		lo, hi := s*per, min((s+1)*per, n)
		go func() {
			for lo < hi {
				k := min(e.cfg.SpawnBatch, hi-lo)
				for range k {
					if _, err := js.PublishAsync(subject, payload); err != nil {
						errc <- err
						return
					}
				}
				select {
				case <-js.PublishAsyncComplete():
				case <-ctx.Done():
					errc <- ctx.Err()
					return
				}
				published.Add(int64(k))
				lo += k
			}
			errc <- nil
		}()
	}
	var errs []error
	for range e.cfg.Spawners {
		errs = append(errs, <-errc)
	}
	pub = time.Since(start)
	stop()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, err
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return 0, 0, err
	}
	if info.State.Msgs != uint64(n) {
		return 0, 0, fmt.Errorf("published %d messages, the stream holds %d", n, info.State.Msgs)
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "drain", AckPolicy: jetstream.AckExplicitPolicy,
		MaxAckPending: 2 * e.cfg.CeilingLoops * e.cfg.CeilingBatch, AckWait: time.Minute})
	if err != nil {
		return 0, 0, err
	}
	var acked atomic.Int64
	stop = e.prog.track("jetstream fetch+ack", int64(n), acked.Load)
	start = time.Now()
	errc = make(chan error, e.cfg.CeilingLoops)
	for range e.cfg.CeilingLoops {
		go func() {
			idle := time.Now()
			for acked.Load() < int64(n) {
				batch, err := cons.Fetch(e.cfg.CeilingBatch, jetstream.FetchMaxWait(100*time.Millisecond))
				if err != nil {
					errc <- err
					return
				}
				got := 0
				for m := range batch.Messages() {
					if err := m.Ack(); err != nil {
						errc <- err
						return
					}
					got++
				}
				if got == 0 && time.Since(idle) > e.cfg.StallTimeout {
					errc <- fmt.Errorf("fetch found nothing for %v with %d of %d acked", e.cfg.StallTimeout, acked.Load(), n)
					return
				}
				if got > 0 {
					idle = time.Now()
				}
				acked.Add(int64(got))
			}
			errc <- nil
		}()
	}
	errs = errs[:0]
	for range e.cfg.CeilingLoops {
		errs = append(errs, <-errc)
	}
	if err := nc.FlushTimeout(30 * time.Second); err != nil {
		errs = append(errs, err)
	}
	drain = time.Since(start)
	stop()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, err
	}
	if got := acked.Load(); got != int64(n) {
		return 0, 0, fmt.Errorf("acked %d messages of %d", got, n)
	}
	return pub, drain, nil
}

// runStoreCeiling is the store-alone part of runCeiling.
func (e *env) runStoreCeiling(ctx context.Context) (Result, error) {
	const name = "ceiling"
	n := e.cfg.Jobs
	queue := e.queueName(name)
	u0 := readUsage()
	enqTime, err := e.enqueueRaw(ctx, name+" enqueue", queue, "bench-raw", n, e.cfg.SpawnBatch)
	if err != nil {
		return Result{}, err
	}
	drainTime, problems, err := e.rawDrain(ctx, name+" claim+complete", queue, n)
	if err != nil {
		return Result{}, err
	}
	// Single round trips straight on the store.
	var lat []time.Duration
	for i := 0; i < e.cfg.RoundTrips; i++ {
		t := time.Now()
		if _, err := e.raw.Enqueue(ctx, []core.EnqueueRequest{{Queue: queue, Task: "bench-raw", Payload: []byte(`{"seq":0}`)}}); err != nil {
			return Result{}, fmt.Errorf("enqueue: %w", err)
		}
		jobs, err := e.raw.Claim(ctx, core.ClaimRequest{Queue: queue, WorkerID: "ceiling-rt", Limit: 1, LeaseTTL: time.Minute})
		if err != nil || len(jobs) != 1 {
			return Result{}, fmt.Errorf("claim one: %d jobs, %v", len(jobs), err)
		}
		if errs, err := e.raw.Complete(ctx, []core.Completion{{Lease: jobs[0].Lease}}); err != nil || errs[0] != nil {
			return Result{}, fmt.Errorf("complete one: %v %v", err, errs)
		}
		lat = append(lat, time.Since(t))
	}
	u1 := readUsage()
	res := Result{
		Scenario:    name,
		Jobs:        n,
		SpawnPerSec: rate(n, enqTime),
		DrainPerSec: rate(n, drainTime),
		ToDone:      percentiles(lat),
		CPUSeconds:  (u1.cpu - u0.cpu).Seconds(),
		PeakRSSMiB:  float64(u1.peakRSS) / (1 << 20),
	}
	res.Problems = append(problems, e.checkCounts(ctx, queue, n+e.cfg.RoundTrips)...)
	return res, nil
}

// rawDrain claims and completes n jobs of queue straight on the store, with
// cfg.CeilingLoops loops that claim cfg.CeilingBatch jobs and complete them
// in one call. It returns how long the drain took and, as problems, any job
// it claimed and completed more than once; or an error when a call fails, a
// completion is refused, or no job can be claimed for cfg.StallTimeout.
func (e *env) rawDrain(ctx context.Context, label, queue string, n int) (time.Duration, []string, error) {
	seen := newTracker(n, 0)
	var done atomic.Int64
	stop := e.prog.track(label, int64(n), done.Load)
	errc := make(chan error, e.cfg.CeilingLoops)
	start := time.Now()
	for i := range e.cfg.CeilingLoops {
		go func() {
			worker := fmt.Sprintf("raw-%d", i)
			items := make([]core.Completion, 0, e.cfg.CeilingBatch)
			idle := time.Now()
			for done.Load() < int64(n) {
				jobs, err := e.raw.Claim(ctx, core.ClaimRequest{Queue: queue, WorkerID: worker, Limit: e.cfg.CeilingBatch, LeaseTTL: 10 * time.Minute})
				if err != nil {
					errc <- fmt.Errorf("claim: %w", err)
					return
				}
				if len(jobs) == 0 {
					if time.Since(idle) > e.cfg.StallTimeout {
						errc <- fmt.Errorf("raw claim found nothing for %v with %d of %d done", e.cfg.StallTimeout, done.Load(), n)
						return
					}
					time.Sleep(time.Millisecond)
					continue
				}
				idle = time.Now()
				items = items[:0]
				for _, j := range jobs {
					items = append(items, core.Completion{Lease: j.Lease})
				}
				errs, err := e.raw.Complete(ctx, items)
				if err != nil {
					errc <- fmt.Errorf("complete: %w", err)
					return
				}
				for k, it := range items {
					if k < len(errs) && errs[k] != nil {
						errc <- fmt.Errorf("complete %s: %w", it.Lease.JobID, errs[k])
						return
					}
					seen.finished(it.Lease.JobID, time.Time{})
				}
				done.Add(int64(len(items)))
			}
			errc <- nil
		}()
	}
	var errs []error
	for range e.cfg.CeilingLoops {
		errs = append(errs, <-errc)
	}
	elapsed := time.Since(start)
	stop()
	if err := errors.Join(errs...); err != nil {
		return 0, nil, err
	}
	var problems []string
	if d, example := seen.completedTwice(); d > 0 {
		problems = append(problems, fmt.Sprintf("%s claimed and completed more than once by the raw loop (e.g. %s)", plural(d, "job"), example))
	}
	return elapsed, problems, nil
}
