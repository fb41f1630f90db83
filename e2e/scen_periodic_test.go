package e2e_test

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// periodicTask is what the periodic scenarios schedule.
var periodicTask = boson.NewTask[string, string]("periodic-echo")

func (e *env) scheduler(c *boson.Client, opts boson.SchedulerOptions) *boson.Scheduler {
	e.Helper()
	opts.Clock, opts.Logger = e.clock, quiet
	s, err := boson.NewScheduler(c, opts)
	e.must(err)
	return s
}

// periodicKeys lists the idempotency keys of the periodic jobs, sorted
// (keys of one schedule sort by tick).
func (e *env) periodicKeys() []string {
	e.Helper()
	page, err := e.b.ListJobs(e.ctx, core.JobFilter{Task: periodicTask.Name(), Limit: 1000})
	e.must(err)
	keys := make([]string, len(page.Jobs))
	for i, j := range page.Jobs {
		keys[i] = j.IdempotencyKey
	}
	slices.Sort(keys)
	return keys
}

func (e *env) wantKeys(name string, ticks ...time.Time) {
	e.Helper()
	got := e.periodicKeys()
	if len(got) != len(ticks) {
		e.Fatalf("%d periodic jobs %v, want %d", len(got), got, len(ticks))
	}
	for i, tick := range ticks {
		if want := boson.PeriodicKey(name, tick); got[i] != want {
			e.Fatalf("job %d key %q, want %q", i, got[i], want)
		}
	}
}

var periodicScenarios = []scenario{
	{"periodic_racing_schedulers", func(e *env) {
		// Four schedulers, each with its own client, pass concurrently at
		// every step of the clock: each tick is stored once.
		var all []*boson.Scheduler
		for range 4 {
			s := e.scheduler(e.newClient(e.b), boson.SchedulerOptions{})
			e.must(boson.AddSchedule(s, "every-20s", boson.Every(20*time.Second), periodicTask, "tick"))
			all = append(all, s)
		}
		var ticks []time.Time
		for step := range 6 {
			if step%2 == 0 {
				ticks = append(ticks, e.clock.Now())
			}
			var wg sync.WaitGroup
			for _, s := range all {
				wg.Go(func() {
					if _, err := s.RunDue(e.ctx); err != nil {
						e.Error(err)
					}
				})
			}
			wg.Wait()
			e.clock.Advance(10 * time.Second)
		}
		e.wantKeys("every-20s", ticks...)
	}},
	{"periodic_racing_connections", func(e *env) {
		// On a durable store, schedulers on separate connections to the
		// same store race (as separate processes would).
		// A store that cannot be opened twice (memory) is shared by
		// separate clients instead.
		stores := []core.QueueBackend{e.b, e.b, e.b}
		if e.factory.Durable {
			locator := e.factory.Locator(e.T)
			stores = []core.QueueBackend{e.factory.Open(e.T, e.clock, locator, true)}
			for range 2 {
				stores = append(stores, e.factory.Open(e.T, e.clock, locator, false))
			}
		}
		var all []*boson.Scheduler
		for i := range 6 {
			s := e.scheduler(e.newClient(stores[i%len(stores)]), boson.SchedulerOptions{Missed: boson.MissedAll, CatchUpWindow: time.Minute})
			e.must(boson.AddSchedule(s, "every-5s", boson.Every(5*time.Second), periodicTask, "tick"))
			all = append(all, s)
		}
		for range 4 {
			var wg sync.WaitGroup
			for _, s := range all {
				wg.Go(func() {
					if _, err := s.RunDue(e.ctx); err != nil {
						e.Error(err)
					}
				})
			}
			wg.Wait()
			e.clock.Advance(5 * time.Second)
		}
		// Ticks from 11:59:05 (a minute back, window excluded) to 12:00:15.
		page, err := stores[0].ListJobs(e.ctx, core.JobFilter{Task: periodicTask.Name(), Limit: 1000})
		e.must(err)
		seen := map[string]bool{}
		for _, j := range page.Jobs {
			if seen[j.IdempotencyKey] {
				e.Fatalf("tick %s stored twice", j.IdempotencyKey)
			}
			seen[j.IdempotencyKey] = true
		}
		for tick := epoch.Add(-55 * time.Second); !tick.After(epoch.Add(15 * time.Second)); tick = tick.Add(5 * time.Second) {
			if !seen[boson.PeriodicKey("every-5s", tick)] {
				e.Fatalf("tick %v missing; have %d jobs", tick, len(page.Jobs))
			}
		}
		if len(page.Jobs) != 15 {
			e.Fatalf("%d jobs, want 15", len(page.Jobs))
		}
	}},
	{"periodic_cron_runs_on_worker", func(e *env) {
		s := e.scheduler(e.client, boson.SchedulerOptions{})
		e.must(boson.AddSchedule(s, "quarter-hour", boson.MustParseCron("*/15 * * * *"), periodicTask, "cron", boson.WithQueue("periodic")))
		w := e.worker(func(o *boson.WorkerOptions) { o.Queues = []string{"periodic"} })
		ran := make(chan string, 8)
		e.must(boson.Register(w, periodicTask, func(_ context.Context, in string) (string, error) {
			ran <- in
			return in, nil
		}))
		e.start(w)
		if n, err := s.RunDue(e.ctx); err != nil || n != 1 { // 12:00 is a tick
			e.Fatalf("first pass stored %d: %v", n, err)
		}
		e.clock.Advance(14 * time.Minute)
		if n, err := s.RunDue(e.ctx); err != nil || n != 0 {
			e.Fatalf("pass between ticks stored %d: %v", n, err)
		}
		e.clock.Advance(time.Minute)
		if n, err := s.RunDue(e.ctx); err != nil || n != 1 {
			e.Fatalf("pass at 12:15 stored %d: %v", n, err)
		}
		for range 2 {
			select {
			case got := <-ran:
				if got != "cron" {
					e.Fatalf("handler got %q", got)
				}
			case <-e.ctx.Done():
				e.Fatal("periodic job never ran")
			}
		}
		e.wantKeys("quarter-hour", epoch, epoch.Add(15*time.Minute))
	}},
	{"periodic_missed_ticks", func(e *env) {
		// One scheduler ran at 12:00, then the process was down for 3h30.
		latest := e.scheduler(e.client, boson.SchedulerOptions{})
		e.must(boson.AddSchedule(latest, "hourly", boson.MustParseCron("0 * * * *"), periodicTask, "h"))
		_, err := latest.RunDue(e.ctx)
		e.must(err)
		e.clock.Advance(3*time.Hour + 30*time.Minute)

		// Restarted with the default policy: only 15:00 is enqueued.
		restarted := e.scheduler(e.newClient(e.b), boson.SchedulerOptions{})
		e.must(boson.AddSchedule(restarted, "hourly", boson.MustParseCron("0 * * * *"), periodicTask, "h"))
		_, err = restarted.RunDue(e.ctx)
		e.must(err)
		e.wantKeys("hourly", epoch, epoch.Add(3*time.Hour))

		// A catch-up scheduler fills 13:00 and 14:00 and reuses the rest.
		all := e.scheduler(e.newClient(e.b), boson.SchedulerOptions{Missed: boson.MissedAll, CatchUpWindow: 4 * time.Hour})
		e.must(boson.AddSchedule(all, "hourly", boson.MustParseCron("0 * * * *"), periodicTask, "h"))
		n, err := all.RunDue(e.ctx)
		e.must(err)
		if n != 2 {
			e.Fatalf("catch-up stored %d, want 2", n)
		}
		e.wantKeys("hourly", epoch, epoch.Add(time.Hour), epoch.Add(2*time.Hour), epoch.Add(3*time.Hour))
	}},
}
