package boson

import (
	"fmt"
	"time"

	"github.com/boson-go/boson/core"
)

// Schedule yields the tick times of a periodic task. Every scheduler
// running the same schedule must compute the same ticks, since a tick's
// time is part of its idempotency key: derive ticks from the time alone,
// never from when a process started.
type Schedule interface {
	// Next returns the first tick strictly after t, or the zero time when
	// there is none.
	Next(t time.Time) time.Time
}

// Interval is a fixed-period [Schedule] aligned to the Unix epoch: it
// ticks at every whole multiple of Period (plus Offset), so all schedulers
// agree on the ticks whenever they start. Build one with [Every].
type Interval struct {
	// Period is the time between ticks: at least one second and a whole
	// number of seconds.
	Period time.Duration
	// Offset shifts every tick, in [0, Period); for example Every(time.Hour)
	// with Offset 15 minutes ticks at a quarter past each hour.
	Offset time.Duration
}

// Every returns an [Interval] schedule ticking every d, at the multiples
// of d since the Unix epoch.
func Every(d time.Duration) Interval { return Interval{Period: d} }

// validate reports whether the interval can produce distinct ticks keyed
// by whole seconds.
func (iv Interval) validate() error {
	if iv.Period < time.Second || iv.Period%time.Second != 0 {
		return fmt.Errorf("%w: interval %v must be a whole number of seconds, at least one", core.ErrInvalidArgument, iv.Period)
	}
	if iv.Offset < 0 || iv.Offset >= iv.Period || iv.Offset%time.Second != 0 {
		return fmt.Errorf("%w: interval offset %v must be whole seconds in [0, %v)", core.ErrInvalidArgument, iv.Offset, iv.Period)
	}
	return nil
}

// Next returns the first tick strictly after t, or the zero time for an
// invalid interval.
func (iv Interval) Next(t time.Time) time.Time {
	if iv.validate() != nil {
		return time.Time{}
	}
	p, off := int64(iv.Period/time.Second), int64(iv.Offset/time.Second)
	s := t.Unix() - off
	n := s / p
	if s%p < 0 {
		n-- // floor for times before the epoch
	}
	return time.Unix((n+1)*p+off, 0).UTC()
}

// String describes the interval.
func (iv Interval) String() string {
	if iv.Offset == 0 {
		return "every " + iv.Period.String()
	}
	return fmt.Sprintf("every %v (offset %v)", iv.Period, iv.Offset)
}
