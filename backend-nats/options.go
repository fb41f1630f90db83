package natsq

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/boson-go/boson/core"
)

// DefaultNamespace is the namespace a Backend uses when Options.Namespace is empty.
const DefaultNamespace = "boson"

// Options configure a Backend. The zero value is useful: namespace "boson",
// one replica, the process clock, core.DefaultLimits, slog.Default.
type Options struct {
	// Namespace prefixes the stream and subjects of this backend, so that
	// several independent boson installations can share one NATS account.
	// It must pass core.ValidateName. Default [DefaultNamespace].
	Namespace string
	// Replicas is the replication factor of the command stream: 1 on a
	// single server (the default), 3 on a cluster. Every command then waits
	// for a quorum of replicas before it is acknowledged.
	Replicas int
	// Clock is this process's clock. The backend dates the ids it makes
	// with it and decides nothing by it: every lease expiry, due time,
	// deadline and rate window is decided by the time the server stamped
	// on the command that decides it (see the package documentation), so a
	// process whose clock runs ahead or behind can make nothing happen early
	// or late. Nil means the process clock.
	Clock core.Clock
	// DecisionClock, when set, replaces the server's time in every decision:
	// commands carry its time instead of taking the time the server stamps
	// on them. It is for tests that move time by hand (the conformance suite
	// hands its core.ManualClock here). Leave it nil in production: with it,
	// processes whose DecisionClocks disagree disagree about time.
	DecisionClock core.Clock
	// Limits bound what the backend accepts; zero fields take
	// core.DefaultLimits.
	Limits core.Limits
	// Logger receives the backend's diagnostics. Nil means slog.Default().
	Logger *slog.Logger
	// PollInterval is how often subscribers of core.Notifier are signalled
	// for queues that hold due jobs, which covers jobs that become due by
	// the passing of time rather than by a command. Default 1s.
	PollInterval time.Duration
	// RequestTimeout bounds one publish attempt of a command. Default 5s.
	RequestTimeout time.Duration
	// PublishAttempts is how often a command is published before the call
	// gives up when the server does not answer. Retries carry the same
	// message id, so the server stores a command at most once. Default 3.
	PublishAttempts int
	// CompactEvery is how many commands may follow the newest snapshot
	// before a Backend takes a new one and purges the log below it (see
	// Compact). 0 means 100,000; a negative value turns automatic
	// compaction off.
	CompactEvery int
	// CompactKeep is how many commands below a snapshot stay in the log,
	// so that a replica that is a little behind catches up from the log
	// instead of reloading the snapshot. Default 10,000.
	CompactKeep int
}

func (o Options) withDefaults() (Options, error) {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if err := core.ValidateName("namespace", o.Namespace); err != nil {
		return o, err
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.Replicas < 1 || o.Replicas > 5 {
		return o, fmt.Errorf("%w: replicas: %d is outside [1, 5]", core.ErrInvalidArgument, o.Replicas)
	}
	if err := o.Limits.Validate(); err != nil {
		return o, err
	}
	o.Limits = o.Limits.WithDefaults()
	o.Clock = core.ClockOrSystem(o.Clock)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.PollInterval < 0 || o.RequestTimeout < 0 || o.PublishAttempts < 0 {
		return o, fmt.Errorf("%w: poll interval, request timeout and publish attempts must not be negative", core.ErrInvalidArgument)
	}
	if o.PollInterval == 0 {
		o.PollInterval = time.Second
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 5 * time.Second
	}
	if o.CompactEvery == 0 {
		o.CompactEvery = 100_000
	}
	if o.CompactKeep < 0 {
		return o, fmt.Errorf("%w: compact keep must not be negative", core.ErrInvalidArgument)
	}
	if o.CompactKeep == 0 {
		o.CompactKeep = 10_000
	}
	if o.PublishAttempts == 0 {
		o.PublishAttempts = 3
	}
	return o, nil
}

// StreamName returns the name of the JetStream stream that holds the
// commands of namespace ns.
func StreamName(ns string) string { return "BOSON_" + ns }

func logSubject(ns string) string  { return "boson." + ns + ".log" }
func partSubject(ns string) string { return "boson." + ns + ".part" }
