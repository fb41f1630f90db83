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
	DefaultBusyTimeout  = time.Second
	DefaultMaxBusyWait  = 5 * time.Second
	DefaultPollInterval = time.Second
	DefaultReadConns    = 4
)

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
	// SQLITE_BUSY before it returns the error; zero means
	// [DefaultMaxBusyWait]. Keep it far below your lease TTLs.
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
	if o.MaxBusyWait == 0 {
		o.MaxBusyWait = DefaultMaxBusyWait
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
