package sqliteq

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/boson-go/boson/core"
)

// Synchronous is SQLite's synchronous setting for the writer.
type Synchronous string

// The synchronous settings the backend accepts.
const (
	// SyncFull (the default) syncs the WAL at every commit: a committed
	// job survives a crash of the process or of the machine.
	SyncFull Synchronous = "FULL"
	// SyncNormal syncs only at checkpoints: much faster commits; a power
	// cut may lose the most recent commits (never corrupt the file). A
	// crash of the process alone loses nothing.
	SyncNormal Synchronous = "NORMAL"
)

// Defaults of [Options].
const (
	// DefaultBusyTimeout is short: a write that meets another process's
	// lock is rolled back and run again, up to its busy wait, so a long
	// wait inside one statement only makes the wait harder to bound.
	DefaultBusyTimeout = 100 * time.Millisecond
	// DefaultMaxBusyWait is the most a zero MaxBusyWait lets a write wait.
	DefaultMaxBusyWait  = 5 * time.Second
	DefaultPollInterval = time.Second
	DefaultReadConns    = 4
)

// LeaseBusyFraction is how much of the shortest lease the busy wait may
// take: a lease must be at least this many times BusyTimeout+MaxBusyWait.
// A write that waits for the file lock holds the backend's one writer
// connection, so a heartbeat may wait behind it and then for the lock
// itself; two such waits plus a heartbeat interval of up to half the
// lease still end before the lease does, and no job runs twice.
const LeaseBusyFraction = 4

// Options configures a Backend. The zero value is durable and ready.
type Options struct {
	// Clock decides leases, deadlines and due times; nil means the
	// process clock.
	Clock core.Clock
	// Limits bounds payloads, headers and batches; zero fields take
	// [core.DefaultLimits].
	Limits core.Limits
	// Logger receives the backend's logs; nil means slog.Default().
	Logger *slog.Logger
	// PollInterval is how often subscriptions get a polling tick, which
	// is how work enqueued by other processes is noticed; zero means
	// [DefaultPollInterval], negative turns the ticks off.
	PollInterval time.Duration
	// Synchronous is the writer's durability; empty means [SyncFull].
	Synchronous Synchronous
	// BusyTimeout is how long one statement waits for another process's
	// lock on the file; zero means [DefaultBusyTimeout].
	BusyTimeout time.Duration
	// MaxBusyWait bounds how long a write keeps retrying after
	// SQLITE_BUSY before it returns the error. Zero follows the leases:
	// once a claim or a heartbeat asked for a lease, every write (that
	// call's own included) waits at most a quarter of the shortest lease
	// asked for so far, BusyTimeout included, and never more than
	// [DefaultMaxBusyWait]. A claim or heartbeat whose lease is shorter
	// than [LeaseBusyFraction] × (BusyTimeout + MaxBusyWait) is refused
	// with [core.ErrInvalidArgument]: a write waiting that long for the
	// lock could let the lease expire under a running attempt, and the
	// job would run twice.
	MaxBusyWait time.Duration
	// ReadConns is the size of the reader pool; zero means
	// [DefaultReadConns].
	ReadConns int
}

func (o Options) withDefaults() (Options, error) {
	switch o.Synchronous {
	case "":
		o.Synchronous = SyncFull
	case SyncFull, SyncNormal:
	default:
		return o, fmt.Errorf("%w: synchronous %q must be FULL or NORMAL", core.ErrInvalidArgument, o.Synchronous)
	}
	if o.BusyTimeout < 0 || o.MaxBusyWait < 0 || o.ReadConns < 0 {
		return o, fmt.Errorf("%w: busy timeout, max busy wait and read connections must not be negative", core.ErrInvalidArgument)
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if o.ReadConns == 0 {
		o.ReadConns = DefaultReadConns
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if err := o.Limits.Validate(); err != nil {
		return o, err
	}
	return o, nil
}
