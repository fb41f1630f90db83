package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/boson-go/boson/cmd/soak"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// River is the River peer on PostgreSQL: one client per run in a fresh
// schema (rivermigrate up), jobs inserted with InsertMany, worked by one
// queue with MaxWorkers workers.
type River struct {
	URL           string
	MaxWorkers    int
	FetchCooldown time.Duration
	FetchPoll     time.Duration
	// Retention is CompletedJobRetentionPeriod of the steady load.
	Retention time.Duration
	Spawners  int
	PerCall   int
}

func (r *River) name() string { return "River " + moduleVersion("github.com/riverqueue/river") }

func (r *River) settings() []soak.Setting {
	return []soak.Setting{
		{Name: "driver", Value: "riverpgxv5 on a pgxpool with its default size"},
		{Name: "MaxWorkers", Value: strconv.Itoa(r.MaxWorkers)},
		{Name: "FetchCooldown", Value: r.FetchCooldown.String()},
		{Name: "FetchPollInterval", Value: r.FetchPoll.String()},
		{Name: "insert", Value: fmt.Sprintf("InsertMany, %d jobs per call from %d goroutines", r.PerCall, r.Spawners)},
	}
}

// riverNoop and riverWork are the benchmark's job kinds; the working one
// sleeps for its Work.
type riverNoop struct {
	Seq int `json:"seq"`
}

func (riverNoop) Kind() string { return "peers_noop" }

type riverWork struct {
	Seq int `json:"seq"`
}

func (riverWork) Kind() string { return "peers_work" }

type riverNoopWorker struct {
	river.WorkerDefaults[riverNoop]
}

func (riverNoopWorker) Work(context.Context, *river.Job[riverNoop]) error { return nil }

type riverWorkWorker struct {
	river.WorkerDefaults[riverWork]
	d time.Duration
}

func (w riverWorkWorker) Work(context.Context, *river.Job[riverWork]) error {
	time.Sleep(w.d)
	return nil
}

// riverEnv is one run's pool, schema and client.
type riverEnv struct {
	pool   *pgxpool.Pool
	schema string
	client *river.Client[pgx.Tx]
}

// open makes a fresh schema, migrates it and builds a client that works
// the default queue; work is the working kind's sleep.
func (r *River) open(ctx context.Context, work, retention time.Duration) (*riverEnv, error) {
	pool, err := pgxpool.New(ctx, r.URL)
	if err != nil {
		return nil, err
	}
	e := &riverEnv{pool: pool, schema: "peers_river_" + suffix()}
	if _, err := pool.Exec(ctx, `CREATE SCHEMA `+e.schema); err != nil {
		pool.Close()
		return nil, err
	}
	driver := riverpgxv5.New(pool)
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: e.schema, Logger: quietLogger()})
	if err == nil {
		_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	}
	if err != nil {
		e.close()
		return nil, fmt.Errorf("river migrate: %w", err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, riverNoopWorker{})
	river.AddWorker(workers, riverWorkWorker{d: work})
	e.client, err = river.NewClient(driver, &river.Config{
		Schema:                      e.schema,
		Queues:                      map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: r.MaxWorkers}},
		FetchCooldown:               r.FetchCooldown,
		FetchPollInterval:           r.FetchPoll,
		CompletedJobRetentionPeriod: retention,
		Workers:                     workers,
		Logger:                      quietLogger(),
	})
	if err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *riverEnv) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = e.pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+e.schema+` CASCADE`)
	e.pool.Close()
}

// insert sends the jobs numbered [first, first+n) in one InsertMany, the
// working kind when work is set.
func (e *riverEnv) insert(ctx context.Context, first, n int, work bool) error {
	params := make([]river.InsertManyParams, n)
	for i := range params {
		if work {
			params[i].Args = riverWork{Seq: first + i}
		} else {
			params[i].Args = riverNoop{Seq: first + i}
		}
	}
	_, err := e.client.InsertMany(ctx, params)
	return err
}

// Batch inserts n no-op jobs, then starts the client and times the drain
// to the last completion event.
func (r *River) Batch(ctx context.Context, n int) (BatchFigures, error) {
	e, err := r.open(ctx, 0, 0)
	if err != nil {
		return BatchFigures{}, err
	}
	defer e.close()
	spawn, err := spawnAll(ctx, n, r.PerCall, r.Spawners, func(ctx context.Context, first, k int) error { return e.insert(ctx, first, k, false) })
	if err != nil {
		return BatchFigures{}, err
	}
	events, cancel := e.client.SubscribeConfig(&river.SubscribeConfig{ChanSize: n + 1000, Kinds: []river.EventKind{river.EventKindJobCompleted}})
	defer cancel()
	start := time.Now()
	if err := e.client.Start(ctx); err != nil {
		return BatchFigures{}, err
	}
	defer stopRiver(e.client)
	if err := awaitEvents(ctx, events, n, nil); err != nil {
		return BatchFigures{}, err
	}
	return BatchFigures{Spawn: rate(n, spawn), Drain: rate(n, time.Since(start))}, nil
}

// Steady offers spec's load to River through the soak driver: batches of
// spec.Batch by turns of the no-op and the working kind. The latency is
// River's own, created_at to attempted_at of each completed job's row.
func (r *River) Steady(ctx context.Context, spec soak.Spec, work time.Duration, report func(soak.Sample)) (*soak.Run, error) {
	e, err := r.open(ctx, work, r.Retention)
	if err != nil {
		return nil, err
	}
	defer e.close()
	probe, err := soak.NewProbe(ctx, r.URL, e.schema)
	if err != nil {
		return nil, err
	}
	defer probe.Close()
	var m soak.Meter
	events, cancel := e.client.SubscribeConfig(&river.SubscribeConfig{ChanSize: 100_000, Kinds: []river.EventKind{river.EventKindJobCompleted}})
	defer cancel()
	watched := make(chan error, 1)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		watched <- awaitEvents(watchCtx, events, -1, &m)
	}()
	if err := e.client.Start(ctx); err != nil {
		return nil, err
	}
	defer stopRiver(e.client)
	spawn := func(ctx context.Context, first, n int) error { return e.insert(ctx, first, n, (first/n)%2 == 1) }
	run, err := soak.Steady(ctx, spec, spawn, &m, probe, report)
	if err != nil {
		return nil, err
	}
	stopWatch()
	if err := <-watched; err != nil && ctx.Err() == nil && err != context.Canceled {
		run.Problems = append(run.Problems, err.Error())
	}
	run.System, run.Store = r.name(), "postgres"
	run.Options = append(r.settings(), soak.Setting{Name: "CompletedJobRetentionPeriod", Value: r.Retention.String()},
		soak.Setting{Name: "JobCleaner interval", Value: "River's default (30s)"})
	return run, nil
}

// awaitEvents counts completion events until want (forever when want < 0)
// and, with m, records each job's created_at to attempted_at.
func awaitEvents(ctx context.Context, events <-chan *river.Event, want int, m *soak.Meter) error {
	got := 0
	idle := time.NewTimer(time.Minute)
	defer idle.Stop()
	if want < 0 {
		idle.Stop() // a steady load's own driver judges stalls
	}
	for want < 0 || got < want {
		select {
		case ev, ok := <-events:
			if !ok {
				return fmt.Errorf("river: subscription closed after %d of %d completions", got, want)
			}
			if ev.Kind != river.EventKindJobCompleted {
				continue
			}
			got++
			if m != nil {
				if j := ev.Job; j != nil && j.AttemptedAt != nil {
					m.Started(j.AttemptedAt.Sub(j.CreatedAt))
				}
				m.Done(1)
			}
			if want >= 0 {
				idle.Reset(time.Minute)
			}
		case <-idle.C:
			return fmt.Errorf("river: no completion for a minute, %d of %d done", got, want)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func stopRiver(c *river.Client[pgx.Tx]) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = c.Stop(ctx)
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
