package boson_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

type tickIn struct {
	Report string `json:"report"`
}

var tickTask = boson.NewTask[tickIn, struct{}]("periodic-report")

func (e *env) scheduler(opts boson.SchedulerOptions) *boson.Scheduler {
	e.t.Helper()
	opts.Clock, opts.Logger = e.clock, quiet
	s, err := boson.NewScheduler(e.client, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) periodicJobs() []core.Job {
	e.t.Helper()
	page, err := e.b.ListJobs(context.Background(), core.JobFilter{Task: tickTask.Name(), Limit: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	return page.Jobs
}

func runDue(t *testing.T, s *boson.Scheduler) int {
	t.Helper()
	n, err := s.RunDue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSchedulerEnqueuesEachTickOnce(t *testing.T) {
	e := newEnv(t)
	s := e.scheduler(boson.SchedulerOptions{})
	if err := boson.AddSchedule(s, "every-minute", boson.Every(time.Minute), tickTask, tickIn{Report: "r"}, boson.WithQueue("cron"), boson.WithPriority(3)); err != nil {
		t.Fatal(err)
	}
	// The clock starts on 2026-01-01T00:00:00Z, itself a tick.
	if n := runDue(t, s); n != 1 {
		t.Fatalf("first pass stored %d, want 1", n)
	}
	if n := runDue(t, s); n != 0 {
		t.Fatalf("second pass at the same time stored %d, want 0", n)
	}
	e.clock.Advance(59 * time.Second)
	if n := runDue(t, s); n != 0 {
		t.Fatalf("before the next tick stored %d", n)
	}
	e.clock.Advance(time.Second)
	if n := runDue(t, s); n != 1 {
		t.Fatalf("at the next tick stored %d, want 1", n)
	}
	jobs := e.periodicJobs()
	if len(jobs) != 2 {
		t.Fatalf("%d jobs, want 2", len(jobs))
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, j := range jobs {
		tick := start.Add(time.Duration(i) * time.Minute)
		if !j.RunAt.Equal(tick) || j.IdempotencyKey != boson.PeriodicKey("every-minute", tick) || j.Queue != "cron" || j.Priority != 3 {
			t.Errorf("job %d: run-at %v key %q queue %q priority %d", i, j.RunAt, j.IdempotencyKey, j.Queue, j.Priority)
		}
	}
	if got, want := jobs[0].IdempotencyKey, "periodic-every-minute-1767225600"; got != want {
		t.Errorf("key %q, want %q", got, want)
	}
}

// TestSchedulersRace runs several schedulers over one backend, passing
// concurrently as the clock moves: every tick is stored exactly once.
func TestSchedulersRace(t *testing.T) {
	e := newEnv(t)
	const schedulers, ticks = 6, 30
	var all []*boson.Scheduler
	for range schedulers {
		s := e.scheduler(boson.SchedulerOptions{})
		if err := boson.AddSchedule(s, "fast", boson.Every(10*time.Second), tickTask, tickIn{Report: "fast"}); err != nil {
			t.Fatal(err)
		}
		if err := boson.AddSchedule(s, "cron", boson.MustParseCron("* * * * *"), tickTask, tickIn{Report: "cron"}); err != nil {
			t.Fatal(err)
		}
		all = append(all, s)
	}
	total := 0
	for range ticks {
		var (
			wg  sync.WaitGroup
			mu  sync.Mutex
			sum int
		)
		for _, s := range all {
			wg.Go(func() {
				for range 3 {
					n, err := s.RunDue(context.Background())
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					sum += n
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		total += sum
		e.clock.Advance(10 * time.Second)
	}
	// 30 passes 10s apart from 00:00:00: 30 interval ticks and 5 minute ticks.
	jobs := e.periodicJobs()
	if len(jobs) != 35 || total != 35 {
		t.Fatalf("%d jobs stored, passes reported %d; want 35", len(jobs), total)
	}
	seen := map[string]bool{}
	for _, j := range jobs {
		if seen[j.IdempotencyKey] {
			t.Fatalf("key %q stored twice", j.IdempotencyKey)
		}
		seen[j.IdempotencyKey] = true
	}
}

func TestSchedulerMissedPolicies(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		opts boson.SchedulerOptions
		want []time.Time // ticks of the jobs after one pass at start+5h30m
	}{
		{"latest", boson.SchedulerOptions{}, []time.Time{start.Add(5 * time.Hour)}},
		{"all", boson.SchedulerOptions{Missed: boson.MissedAll, CatchUpWindow: 6 * time.Hour}, []time.Time{
			start, start.Add(time.Hour), start.Add(2 * time.Hour), start.Add(3 * time.Hour), start.Add(4 * time.Hour), start.Add(5 * time.Hour)}},
		{"all capped", boson.SchedulerOptions{Missed: boson.MissedAll, MaxCatchUp: 2}, []time.Time{start.Add(4 * time.Hour), start.Add(5 * time.Hour)}},
		{"all windowed", boson.SchedulerOptions{Missed: boson.MissedAll, CatchUpWindow: 151 * time.Minute}, []time.Time{start.Add(3 * time.Hour), start.Add(4 * time.Hour), start.Add(5 * time.Hour)}},
		{"window excludes its start", boson.SchedulerOptions{Missed: boson.MissedAll, CatchUpWindow: 150 * time.Minute}, []time.Time{start.Add(4 * time.Hour), start.Add(5 * time.Hour)}},
		{"all, default window", boson.SchedulerOptions{Missed: boson.MissedAll, MaxCatchUp: 1000}, nil},
		{"skip", boson.SchedulerOptions{Missed: boson.MissedSkip}, nil},
		{"skip tolerant", boson.SchedulerOptions{Missed: boson.MissedSkip, Tolerance: time.Hour}, []time.Time{start.Add(5 * time.Hour)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			// Ticks of 00:00 happened "before" this process: the clock
			// is already 5h30 later when the scheduler first passes.
			e.clock.Advance(5*time.Hour + 30*time.Minute)
			s := e.scheduler(tc.opts)
			if err := boson.AddSchedule(s, "hourly", boson.MustParseCron("@hourly"), tickTask, tickIn{}); err != nil {
				t.Fatal(err)
			}
			runDue(t, s)
			jobs := e.periodicJobs()
			if tc.name == "all, default window" {
				// 24 hourly ticks in (05:30 the day before, 05:30].
				if len(jobs) != 24 {
					t.Fatalf("%d jobs, want 24", len(jobs))
				}
				tc.want = nil
				jobs = nil
			}
			if len(jobs) != len(tc.want) {
				t.Fatalf("%d jobs, want %d", len(jobs), len(tc.want))
			}
			for i, j := range jobs {
				// A late tick is due at once: the backend stores run-at
				// as the enqueue time; the key names the tick.
				if want := boson.PeriodicKey("hourly", tc.want[i]); j.IdempotencyKey != want {
					t.Errorf("job %d has key %q, want %q", i, j.IdempotencyKey, want)
				}
			}
			// Steady state: the next tick is enqueued on time whatever the policy.
			e.clock.Set(start.Add(6 * time.Hour))
			if n := runDue(t, s); n != 1 {
				t.Fatalf("on-time tick stored %d, want 1", n)
			}
		})
	}
}

// TestSchedulerRestartReusesTick: a scheduler restarted after enqueuing
// a tick does not store it again.
func TestSchedulerRestartReusesTick(t *testing.T) {
	e := newEnv(t)
	e.clock.Advance(30 * time.Second)
	for i := range 3 {
		s := e.scheduler(boson.SchedulerOptions{Missed: boson.MissedAll})
		if err := boson.AddSchedule(s, "m", boson.Every(time.Minute), tickTask, tickIn{}); err != nil {
			t.Fatal(err)
		}
		want := 0
		if i == 0 {
			want = 100 // MaxCatchUp's default
		}
		if n := runDue(t, s); n != want {
			t.Fatalf("restart %d stored %d, want %d", i, n, want)
		}
	}
}

func TestSchedulerConflictAndErrors(t *testing.T) {
	e := newEnv(t)
	a, b := e.scheduler(boson.SchedulerOptions{}), e.scheduler(boson.SchedulerOptions{})
	if err := boson.AddSchedule(a, "s", boson.Every(time.Minute), tickTask, tickIn{Report: "v1"}); err != nil {
		t.Fatal(err)
	}
	if err := boson.AddSchedule(b, "s", boson.Every(time.Minute), tickTask, tickIn{Report: "v2"}); err != nil {
		t.Fatal(err)
	}
	if n := runDue(t, a); n != 1 {
		t.Fatalf("stored %d", n)
	}
	// Another version of the schedule finds the tick taken: not an error.
	if n := runDue(t, b); n != 0 {
		t.Fatalf("conflicting definition stored %d", n)
	}
	if len(e.periodicJobs()) != 1 {
		t.Fatal("the tick was stored twice")
	}

	// A rate limit refuses the spawn: the pass reports it and the next
	// pass retries the same tick.
	c := e.scheduler(boson.SchedulerOptions{})
	if err := e.client.PutTaskConfig(context.Background(), core.TaskConfig{Task: tickTask.Name(), MaxInFlight: 1}); err != nil {
		t.Fatal(err)
	}
	if err := boson.AddSchedule(c, "limited", boson.Every(time.Minute), tickTask, tickIn{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RunDue(context.Background()); !errors.Is(err, core.ErrRateLimited) {
		t.Fatalf("err = %v, want ErrRateLimited", err)
	}
	if _, err := e.b.Cancel(context.Background(), e.periodicJobs()[0].ID, "make room"); err != nil {
		t.Fatal(err)
	}
	if n := runDue(t, c); n != 1 {
		t.Fatalf("retry stored %d, want 1", n)
	}
}

func TestSchedulerValidation(t *testing.T) {
	e := newEnv(t)
	s := e.scheduler(boson.SchedulerOptions{})
	bad := []error{
		boson.AddSchedule(s, "", boson.Every(time.Minute), tickTask, tickIn{}),
		boson.AddSchedule(s, "x", nil, tickTask, tickIn{}),
		boson.AddSchedule(s, "x", boson.Every(500*time.Millisecond), tickTask, tickIn{}),
		boson.AddSchedule(s, "x", boson.Interval{Period: time.Minute, Offset: time.Minute}, tickTask, tickIn{}),
		boson.AddSchedule(s, "x", boson.Every(time.Minute), boson.NewTask[tickIn, struct{}](""), tickIn{}),
		boson.AddSchedule(s, "x", boson.Every(time.Minute), boson.NewTask[chan int, struct{}]("t"), make(chan int)),
	}
	if err := boson.AddSchedule(s, "dup", boson.Every(time.Minute), tickTask, tickIn{}); err != nil {
		t.Fatal(err)
	}
	bad = append(bad, boson.AddSchedule(s, "dup", boson.Every(time.Minute), tickTask, tickIn{}))
	for i, err := range bad {
		if !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("case %d: err = %v, want ErrInvalidArgument", i, err)
		}
	}
	if _, err := boson.NewScheduler(e.client, boson.SchedulerOptions{Missed: 7}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("bad policy: %v", err)
	}
	if _, err := boson.NewScheduler(nil, boson.SchedulerOptions{}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("nil client: %v", err)
	}
	if !s.RemoveSchedule("dup") || s.RemoveSchedule("dup") {
		t.Error("RemoveSchedule")
	}
}

// TestSchedulerRunAndWorker runs the loop next to a worker: the tick's
// job runs.
func TestSchedulerRunAndWorker(t *testing.T) {
	e := newEnv(t)
	s := e.scheduler(boson.SchedulerOptions{})
	if err := boson.AddSchedule(s, "m", boson.Every(time.Minute), tickTask, tickIn{Report: "x"}); err != nil {
		t.Fatal(err)
	}
	if got, want := s.NextTick(), e.clock.Now().Add(time.Minute); !got.Equal(want) {
		t.Fatalf("NextTick %v, want %v", got, want)
	}
	ran := make(chan string, 4)
	w := e.worker(nil)
	if err := boson.Register(w, tickTask, func(ctx context.Context, in tickIn) (struct{}, error) {
		ran <- in.Report
		return struct{}{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	e.start(w)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	if got := <-ran; got != "x" {
		t.Fatalf("ran %q", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestSchedulerConcurrentUse adds, removes, passes and peeks at once.
func TestSchedulerConcurrentUse(t *testing.T) {
	e := newEnv(t)
	s := e.scheduler(boson.SchedulerOptions{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			name := []string{"a", "b", "c", "d"}[i]
			for range 20 {
				_ = boson.AddSchedule(s, name, boson.Every(time.Second), tickTask, tickIn{Report: name})
				if _, err := s.RunDue(context.Background()); err != nil {
					t.Error(err)
				}
				_ = s.NextTick()
				s.RemoveSchedule(name)
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			e.clock.Advance(time.Second)
		}
	})
	wg.Wait()
}
