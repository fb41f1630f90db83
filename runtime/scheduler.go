package boson

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
)

// MissedPolicy decides what a [Scheduler] enqueues when a pass finds more
// than one due tick of a schedule, or a tick that is late: after downtime,
// at start-up, or when a pass was delayed.
type MissedPolicy int

const (
	// MissedLatest (the default) enqueues only the most recent due tick
	// and drops the older ones.
	MissedLatest MissedPolicy = iota
	// MissedAll enqueues every due tick within the catch-up window, at
	// most [SchedulerOptions.MaxCatchUp] of them (the most recent ones),
	// oldest first.
	MissedAll
	// MissedSkip enqueues a tick only when it is at most
	// [SchedulerOptions.Tolerance] late; ticks missed during downtime are
	// dropped.
	MissedSkip
)

// SchedulerOptions configure a [Scheduler]. The zero value is useful: the
// most recent missed tick within a day is enqueued after downtime.
type SchedulerOptions struct {
	// Missed is the policy for missed ticks; the zero value is MissedLatest.
	Missed MissedPolicy
	// CatchUpWindow is how far back a starting scheduler looks for ticks
	// it may have missed; 0 means 24 hours. Older ticks are never enqueued.
	CatchUpWindow time.Duration
	// MaxCatchUp bounds the ticks MissedAll enqueues for one schedule in
	// one pass; 0 means 100.
	MaxCatchUp int
	// Tolerance is how late a tick may be and still be enqueued under
	// MissedSkip; 0 means one minute.
	Tolerance time.Duration
	// MaxWait bounds how long [Scheduler.Run] sleeps between passes, so a
	// clock step is noticed; 0 means one minute.
	MaxWait time.Duration
	// Clock must agree with the backend's clock; nil means the process clock.
	Clock core.Clock
	// Logger receives structured logs; nil means slog.Default().
	Logger *slog.Logger
}

// Scheduler enqueues periodic tasks. Every tick of a schedule becomes one
// job whose run-at is the tick time and whose idempotency key (per queue)
// is "periodic-<schedule name>-<tick Unix seconds>" (a late tick is due at
// once). Because the backend
// stores each key once, any number of schedulers, in any number of
// processes, may run the same schedules: each tick is enqueued exactly
// once, with no leader election. Keep the jobs of a queue that holds
// periodic tasks retained for longer than CatchUpWindow, or a tick whose
// job was already deleted could be enqueued again by a scheduler that
// starts later.
//
// Create one with [NewScheduler], add schedules with [AddSchedule], then
// call [Scheduler.Run] (or [Scheduler.RunDue] from your own loop).
type Scheduler struct {
	client *Client
	opts   SchedulerOptions
	clock  core.Clock
	log    *slog.Logger

	mu      sync.Mutex
	entries map[string]*scheduleEntry

	pass sync.Mutex // serializes passes
}

type scheduleEntry struct {
	name  string
	sched Schedule
	task  string
	// request builds the spawn of one tick.
	request func(tick time.Time, key string) Request
	// last is the latest tick this scheduler has dealt with (enqueued,
	// reused or dropped by the policy); zero before the first pass.
	last time.Time
}

// NewScheduler returns a scheduler that spawns through c. Invalid options
// give an error wrapping [core.ErrInvalidArgument].
func NewScheduler(c *Client, opts SchedulerOptions) (*Scheduler, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: client is nil", core.ErrInvalidArgument)
	}
	if opts.Missed < MissedLatest || opts.Missed > MissedSkip {
		return nil, fmt.Errorf("%w: unknown missed-tick policy %d", core.ErrInvalidArgument, opts.Missed)
	}
	if opts.CatchUpWindow < 0 || opts.MaxCatchUp < 0 || opts.Tolerance < 0 || opts.MaxWait < 0 {
		return nil, fmt.Errorf("%w: scheduler durations and limits must not be negative", core.ErrInvalidArgument)
	}
	if opts.CatchUpWindow == 0 {
		opts.CatchUpWindow = 24 * time.Hour
	}
	if opts.MaxCatchUp == 0 {
		opts.MaxCatchUp = 100
	}
	if opts.Tolerance == 0 {
		opts.Tolerance = time.Minute
	}
	if opts.MaxWait == 0 {
		opts.MaxWait = time.Minute
	}
	s := &Scheduler{client: c, opts: opts, clock: opts.Clock, log: opts.Logger, entries: map[string]*scheduleEntry{}}
	if s.clock == nil {
		s.clock = core.SystemClock{}
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s, nil
}

// AddSchedule registers the periodic task named name: at every tick of
// sched, task t is spawned with input in and opts. The options may choose
// the queue, priority, attempts, retry, headers and so on; the run-at and
// the idempotency key are always the tick's. The name must satisfy
// [core.ValidateName] and be unique within s (and mean the same schedule
// in every process that runs it). Errors wrap [core.ErrInvalidArgument].
func AddSchedule[In, Out any](s *Scheduler, name string, sched Schedule, t Task[In, Out], in In, opts ...SpawnOption) error {
	if s == nil {
		return fmt.Errorf("%w: scheduler is nil", core.ErrInvalidArgument)
	}
	if err := core.ValidateName("schedule", name); err != nil {
		return err
	}
	if err := t.Validate(); err != nil {
		return err
	}
	if sched == nil {
		return fmt.Errorf("%w: schedule %q has no schedule", core.ErrInvalidArgument, name)
	}
	if v, ok := sched.(interface{ validate() error }); ok {
		if err := v.validate(); err != nil {
			return fmt.Errorf("schedule %q: %w", name, err)
		}
	}
	if _, err := encode("input", in); err != nil {
		return fmt.Errorf("schedule %q: %w", name, err)
	}
	base := append([]SpawnOption(nil), opts...)
	e := &scheduleEntry{name: name, sched: sched, task: t.Name()}
	e.request = func(tick time.Time, key string) Request {
		o := append(append([]SpawnOption(nil), base...), WithRunAt(tick), WithIdempotencyKey(key))
		return t.Request(in, o...)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.entries[name]; dup {
		return fmt.Errorf("%w: schedule %q is already registered", core.ErrInvalidArgument, name)
	}
	s.entries[name] = e
	return nil
}

// RemoveSchedule stops enqueuing the schedule called name and reports
// whether it was registered. Jobs already enqueued are untouched.
func (s *Scheduler) RemoveSchedule(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.entries[name]
	delete(s.entries, name)
	return ok
}

// PeriodicKey returns the idempotency key of the tick of the schedule
// called name: "periodic-<name>-<tick Unix seconds>".
func PeriodicKey(name string, tick time.Time) string {
	return "periodic-" + name + "-" + strconv.FormatInt(tick.Unix(), 10)
}

// RunDue runs one pass at the scheduler clock's current time: for every
// schedule it spawns the due ticks the missed-tick policy selects. It
// returns how many jobs it stored (ticks already enqueued by another
// scheduler are reused and not counted). A failed spawn is retried by the
// next pass; the errors of all schedules are joined.
func (s *Scheduler) RunDue(ctx context.Context) (int, error) {
	s.pass.Lock()
	defer s.pass.Unlock()
	now := s.clock.Now()
	var (
		stored int
		errs   []error
	)
	for _, e := range s.snapshot() {
		n, err := s.runEntry(ctx, e, now)
		stored += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return stored, errors.Join(errs...)
}

// snapshot returns the entries in name order.
func (s *Scheduler) snapshot() []*scheduleEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*scheduleEntry, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// maxTickScan bounds the ticks examined for one schedule in one pass.
const maxTickScan = 1_000_000

// due returns the ticks in (from, now] the policy selects and the latest
// tick examined.
func (s *Scheduler) due(e *scheduleEntry, now time.Time) (ticks []time.Time, latest time.Time) {
	from := e.last
	if floor := now.Add(-s.opts.CatchUpWindow); from.IsZero() || from.Before(floor) {
		from = floor
	}
	keep := 1
	if s.opts.Missed == MissedAll {
		keep = s.opts.MaxCatchUp
	}
	if iv, ok := e.sched.(Interval); ok && iv.Period > 0 && int64(keep+1) < int64(s.opts.CatchUpWindow/iv.Period) {
		// Only the last keep ticks matter: skip the scan of older ones.
		if jump := now.Add(-time.Duration(keep+1) * iv.Period); jump.After(from) {
			from = jump
		}
	}
	t := from
	for i := 0; i < maxTickScan; i++ {
		next := e.sched.Next(t)
		if next.IsZero() || next.After(now) || !next.After(t) {
			break
		}
		t = next
		latest = next
		ticks = append(ticks, next)
		if len(ticks) > keep {
			ticks = ticks[1:]
		}
	}
	if s.opts.Missed == MissedSkip && len(ticks) == 1 && now.Sub(ticks[0]) > s.opts.Tolerance {
		ticks = nil
	}
	return ticks, latest
}

func (s *Scheduler) runEntry(ctx context.Context, e *scheduleEntry, now time.Time) (int, error) {
	ticks, latest := s.due(e, now)
	stored := 0
	for _, tick := range ticks {
		key := PeriodicKey(e.name, tick)
		sp, err := s.client.SpawnRequests(ctx, e.request(tick, key))
		switch {
		case errors.Is(err, core.ErrIdempotencyConflict):
			// Another definition of this schedule (other input or options,
			// say during a rolling deploy) already enqueued the tick.
			s.log.WarnContext(ctx, "boson: periodic tick already enqueued with other input or options", "schedule", e.name, "tick", tick, "key", key)
		case err != nil:
			if prev := tick.Add(-time.Nanosecond); prev.After(e.last) {
				e.last = prev
			}
			return stored, fmt.Errorf("boson: schedule %q tick %s: %w", e.name, tick.Format(time.RFC3339), err)
		case !sp[0].Reused:
			stored++
			s.log.DebugContext(ctx, "boson: periodic tick enqueued", "schedule", e.name, "tick", tick, "job_id", sp[0].Job.ID)
		}
		e.last = tick
	}
	if latest.After(e.last) {
		e.last = latest
	}
	return stored, nil
}

// NextTick returns the earliest upcoming tick over all schedules after the
// last pass, or the zero time when no schedule has one. It waits for a
// pass in progress.
func (s *Scheduler) NextTick() time.Time {
	s.pass.Lock()
	defer s.pass.Unlock()
	now := s.clock.Now()
	var next time.Time
	for _, e := range s.snapshot() {
		from := now
		if !e.last.IsZero() && e.last.Before(now) {
			from = e.last
		}
		t := e.sched.Next(from)
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// Run passes at every tick until ctx ends, sleeping in between (at most
// MaxWait at a time), and returns nil when ctx ends. Errors of a pass are
// logged and retried at the next pass.
func (s *Scheduler) Run(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		_, err := s.RunDue(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.ErrorContext(ctx, "boson: periodic pass failed", "err", err)
		}
		wait := s.opts.MaxWait
		if next := s.NextTick(); !next.IsZero() {
			if d := next.Sub(s.clock.Now()); d < wait {
				wait = max(d, time.Millisecond)
			}
		}
		if err != nil {
			// A failed tick is due again at once; retry it no faster than
			// once a second.
			wait = max(wait, min(time.Second, s.opts.MaxWait))
		}
		timer.Reset(wait)
	}
}
