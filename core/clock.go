package core

import (
	"sync"
	"time"
)

// Clock tells the time. Backends take one in their options so that tests
// can decide every lease, deadline and due time without sleeping.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
}

// SystemClock is the process clock, in UTC.
type SystemClock struct{}

// Now returns time.Now in UTC.
func (SystemClock) Now() time.Time { return time.Now().UTC() }

// ManualClock is a Clock that moves only when told. It is safe for
// concurrent use. The zero value starts at the Unix epoch; use
// [NewManualClock] to start elsewhere.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock returns a ManualClock set to start, truncated to milliseconds.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start.UTC().Truncate(time.Millisecond)}
}

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now.IsZero() {
		c.now = time.Unix(0, 0).UTC()
	}
	return c.now
}

// Advance moves the clock forward by d (backward when d is negative) and
// returns the new time.
func (c *ManualClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now.IsZero() {
		c.now = time.Unix(0, 0).UTC()
	}
	c.now = c.now.Add(d)
	return c.now
}

// Set moves the clock to t.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t.UTC()
}

// ClockOrSystem returns c, or [SystemClock] when c is nil.
func ClockOrSystem(c Clock) Clock {
	if c == nil {
		return SystemClock{}
	}
	return c
}
