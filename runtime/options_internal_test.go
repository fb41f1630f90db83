package boson

import (
	"errors"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// TestRescueIntervalFollowsLease: the rescue loop's default period is half
// the lease, so that a dead worker's jobs wait about one and a half leases
// whatever the lease is, and an explicit period is kept.
func TestRescueIntervalFollowsLease(t *testing.T) {
	for _, c := range []struct {
		lease, rescue, want time.Duration
	}{
		{0, 0, 15 * time.Second},
		{2 * time.Second, 0, time.Second},
		{10 * time.Minute, 0, 5 * time.Minute},
		{2 * time.Second, 5 * time.Second, 5 * time.Second},
		{2 * time.Second, -1, -1},
	} {
		o, err := WorkerOptions{LeaseTTL: c.lease, RescueInterval: c.rescue}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if o.RescueInterval != c.want {
			t.Errorf("lease %v, rescue %v: rescue interval %v, want %v", c.lease, c.rescue, o.RescueInterval, c.want)
		}
	}
}

// TestHeartbeatWellBelowLease: a heartbeat interval above half the lease
// is refused, because one slow or failed renewal would then let the lease
// expire under a running attempt and the job run twice.
func TestHeartbeatWellBelowLease(t *testing.T) {
	for _, hb := range []time.Duration{600 * time.Millisecond, 999 * time.Millisecond, time.Second, 2 * time.Second} {
		if _, err := (WorkerOptions{LeaseTTL: time.Second, HeartbeatInterval: hb}).withDefaults(); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("heartbeat %v with a 1s lease: %v, want core.ErrInvalidArgument", hb, err)
		}
	}
	for _, hb := range []time.Duration{0, time.Millisecond, 500 * time.Millisecond} {
		if _, err := (WorkerOptions{LeaseTTL: time.Second, HeartbeatInterval: hb}).withDefaults(); err != nil {
			t.Errorf("heartbeat %v with a 1s lease: %v", hb, err)
		}
	}
}
