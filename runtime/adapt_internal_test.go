package boson

import (
	"errors"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

// adaptFixture is a worker that is never started, whose adapter is driven
// by hand: each window is given its claims and finished handlers.
type adaptFixture struct {
	t   *testing.T
	w   *Worker
	a   *adapter
	now time.Time
}

func newAdaptFixture(t *testing.T, opts WorkerOptions) *adaptFixture {
	t.Helper()
	b := mem.New(mem.Options{})
	t.Cleanup(func() { _ = b.Close() })
	w, err := NewWorker(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	w.limit.Store(int64(w.opts.startSlots()))
	f := &adaptFixture{t: t, w: w, a: newAdapter(w, w.opts.startSlots(), w.opts.MaxConcurrency)}
	if w.opts.adaptive() {
		w.adapt = f.a
	}
	f.now = f.a.start
	return f
}

// window feeds one window: claims of which full came back full, short and
// slow finished handlers; it returns the slots after it.
func (f *adaptFixture) window(claims, full int, short, slow int64) int {
	c := f.w.counters[core.DefaultQueue]
	c.hist[0].Add(short)
	c.hist[len(c.hist)-1].Add(slow)
	for i := range claims {
		if i < full {
			f.a.claimed(5, 5)
		} else {
			f.a.claimed(5, 2)
		}
	}
	f.now = f.now.Add(adaptTick)
	f.a.adjust(f.now)
	return f.w.slots()
}

// settle feeds the first claim after a growth, which opens the window the
// growth is judged over; it fails the test if the slots change.
func (f *adaptFixture) settle() {
	f.t.Helper()
	before := f.w.slots()
	f.a.claimed(5, 5)
	f.now = f.now.Add(time.Millisecond)
	f.a.adjust(f.now)
	if got := f.w.slots(); got != before || f.a.settling {
		f.t.Fatalf("settling claim: %d slots (want %d), still settling %v", got, before, f.a.settling)
	}
}

// TestAdaptiveSlotsGrowWhileShortAndFull: full claims of short handlers
// grow the slots fourfold up to the ceiling while each growth raises the
// rate; partial claims and idle windows leave them alone.
func TestAdaptiveSlotsGrowWhileShortAndFull(t *testing.T) {
	if ExecutionBuckets[adaptShortBucket] != 100*time.Millisecond {
		t.Fatalf("short bucket bound %v, want 100ms", ExecutionBuckets[adaptShortBucket])
	}
	f := newAdaptFixture(t, WorkerOptions{MaxConcurrency: 200})
	if got := f.w.slots(); got != 10 {
		t.Fatalf("start: %d slots, want 10", got)
	}
	for i, want := range []int{40, 160, 200, 200} {
		if got := f.window(4, 4, 100<<i, 0); got != want {
			t.Fatalf("after a full window: %d slots, want %d", got, want)
		}
		if want < 200 {
			f.settle()
		}
	}
	f.w.setSlots(20)
	f.a.probing, f.a.settling = false, false
	if got := f.window(4, 1, 100, 0); got != 20 {
		t.Fatalf("partial claims: %d slots, want 20", got)
	}
	if got := f.window(0, 0, 0, 0); got != 20 {
		t.Fatalf("idle window: %d slots, want 20", got)
	}
}

// TestAdaptiveSlotsShrinkWhenSlow: a window where most handlers took more
// than 100 ms halves the slots, never below the start.
func TestAdaptiveSlotsShrinkWhenSlow(t *testing.T) {
	f := newAdaptFixture(t, WorkerOptions{})
	f.w.setSlots(80)
	for _, want := range []int{40, 20, 10, 10} {
		if got := f.window(4, 4, 1, 5); got != want {
			t.Fatalf("after a slow window: %d slots, want %d", got, want)
		}
	}
}

// TestAdaptiveSlotsUndoFruitlessGrowth: a growth that does not raise the
// rate of finished handlers is undone and not tried again for a while,
// twice as long after each undone growth in a row up to adaptHold, and
// the next growth is twofold; one that does is kept and resets both.
func TestAdaptiveSlotsUndoFruitlessGrowth(t *testing.T) {
	f := newAdaptFixture(t, WorkerOptions{})
	if got := f.window(4, 4, 100, 0); got != 40 {
		t.Fatalf("first growth: %d slots, want 40", got)
	}
	f.settle()
	if got := f.window(4, 4, 200, 0); got != 160 {
		t.Fatalf("growth that doubled the rate: %d slots, want 160", got)
	}
	f.settle()
	held := func(hold int) {
		t.Helper()
		if got := f.window(4, 4, 200, 0); got != 40 {
			t.Fatalf("growth that bought nothing: %d slots, want 40 again", got)
		}
		for range hold - 1 {
			if got := f.window(4, 4, 200, 0); got != 40 {
				t.Fatalf("while held for %d windows: %d slots, want 40", hold, got)
			}
		}
		if got := f.window(4, 4, 200, 0); got != 80 {
			t.Fatalf("after a hold of %d windows: %d slots, want 80 (twofold after an undone growth)", hold, got)
		}
		f.settle()
	}
	for hold := adaptHoldFirst; hold < adaptHold; hold *= 2 {
		held(hold)
	}
	held(adaptHold)
	held(adaptHold)
	// A kept growth resets the hold and the fourfold step.
	if got := f.window(4, 4, 400, 0); got != 320 {
		t.Fatalf("growth that doubled the rate: %d slots, want 320", got)
	}
	f.settle()
	if got := f.window(4, 4, 400, 0); got != 80 {
		t.Fatalf("growth that bought nothing: %d slots, want 80 again", got)
	}
	if f.a.hold != adaptHoldFirst {
		t.Fatalf("hold after a kept growth and one undone: %d windows, want %d", f.a.hold, adaptHoldFirst)
	}
}

// TestFixedConcurrencyHasNoAdapter: an explicit Concurrency fixes the
// slots, and MaxConcurrency may only repeat it.
func TestFixedConcurrencyHasNoAdapter(t *testing.T) {
	o, err := WorkerOptions{Concurrency: 7}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.adaptive() || o.startSlots() != 7 || o.MaxConcurrency != 7 {
		t.Fatalf("fixed 7: adaptive %v, start %d, max %d", o.adaptive(), o.startSlots(), o.MaxConcurrency)
	}
	if _, err := (WorkerOptions{Concurrency: 7, MaxConcurrency: 7}).withDefaults(); err != nil {
		t.Fatalf("equal concurrency and max: %v", err)
	}
	o, err = WorkerOptions{MaxConcurrency: 4}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if !o.adaptive() || o.startSlots() != 4 {
		t.Fatalf("max 4: adaptive %v, start %d", o.adaptive(), o.startSlots())
	}
	o, _ = WorkerOptions{}.withDefaults()
	if !o.adaptive() || o.startSlots() != 10 || o.MaxConcurrency != 1000 {
		t.Fatalf("zero options: adaptive %v, start %d, max %d", o.adaptive(), o.startSlots(), o.MaxConcurrency)
	}
	for name, bad := range map[string]WorkerOptions{
		"negative max":     {MaxConcurrency: -1},
		"max below fixed":  {Concurrency: 8, MaxConcurrency: 4},
		"max above fixed":  {Concurrency: 8, MaxConcurrency: 16},
		"negative fixed":   {Concurrency: -2, MaxConcurrency: 16},
		"negative limit":   {RescueLimit: -1},
		"negative batch":   {CompletionBatch: -1},
		"negative grace":   {ShutdownGrace: -time.Second},
		"negative lease":   {LeaseTTL: -time.Second},
		"negative beat":    {HeartbeatInterval: -time.Second},
		"beat above lease": {LeaseTTL: time.Second, HeartbeatInterval: 2 * time.Second},
	} {
		if _, err := bad.withDefaults(); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("%s: %v, want core.ErrInvalidArgument", name, err)
		}
	}
}

// TestMaxConcurrencyFromEnv: BOSON_MAX_CONCURRENCY sets the ceiling, and
// a value that is no integer is refused.
func TestMaxConcurrencyFromEnv(t *testing.T) {
	env := map[string]string{EnvMaxConcurrency: " 250 "}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	o, err := workerOptionsFrom(WorkerOptions{}, lookup)
	if err != nil || o.MaxConcurrency != 250 {
		t.Fatalf("max concurrency %d, %v; want 250", o.MaxConcurrency, err)
	}
	env[EnvMaxConcurrency] = "many"
	if _, err := workerOptionsFrom(WorkerOptions{}, lookup); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("bad value: %v, want core.ErrInvalidArgument", err)
	}
}

// TestLongHandlersGiveBackTheirSlots: an adaptive worker lets handlers
// that have run past adaptLong stop holding a slot, up to as many as there
// are slots and within the ceiling; fixed slots stay fixed.
func TestLongHandlersGiveBackTheirSlots(t *testing.T) {
	for _, c := range []struct {
		opts                 WorkerOptions
		slots, running, long int
		want                 int
	}{
		{WorkerOptions{}, 10, 10, 0, 0},
		{WorkerOptions{}, 10, 10, 4, 4},
		{WorkerOptions{}, 10, 20, 10, 0},
		{WorkerOptions{}, 10, 20, 15, 0},
		{WorkerOptions{MaxConcurrency: 15}, 10, 10, 10, 5},
		{WorkerOptions{Concurrency: 10}, 10, 10, 4, 0},
	} {
		f := newAdaptFixture(t, c.opts)
		f.w.limit.Store(int64(c.slots))
		f.w.inflight.Store(int64(c.running))
		f.w.owned.Store(int64(c.running))
		f.w.longRunning.Store(int64(c.long))
		if got := f.w.free(); got != c.want {
			t.Errorf("max %d, fixed %d: %d slots, %d running of which %d long: %d free, want %d", c.opts.MaxConcurrency, c.opts.Concurrency, c.slots, c.running, c.long, got, c.want)
		}
	}
}
