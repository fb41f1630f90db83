package kvq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultNamespace is the namespace a Backend uses when Options.Namespace is empty.
const DefaultNamespace = "boson"

// MinServerVersion is the oldest NATS server the backend runs on.
const MinServerVersion = "2.9.0"

// Options configure a Backend. The zero value is useful: namespace "boson",
// one replica, the server's time, core.DefaultLimits, slog.Default.
type Options struct {
	// Namespace names the namespace's streams, so that several independent
	// boson installations can share one NATS account. It must pass
	// core.ValidateName. Default [DefaultNamespace].
	Namespace string
	// Replicas of the namespace's streams: 1 (the default) on one server,
	// 3 on a cluster, where every write waits for a quorum.
	Replicas int
	// Clock is this process's clock. It dates the ids the backend makes
	// and decides nothing: every lease expiry, due time, deadline and rate
	// window is decided by the server's time (see the package
	// documentation), so a process whose clock is wrong can make nothing
	// happen early or late. Nil is the process clock.
	Clock core.Clock
	// DecisionClock, when set, replaces the server's time in every
	// decision. It is for tests that move time by hand (the conformance
	// suite hands its core.ManualClock here). Leave it nil in production.
	DecisionClock core.Clock
	// Limits bound what the backend accepts; zero fields take
	// core.DefaultLimits.
	Limits core.Limits
	// Logger receives the backend's diagnostics. Nil is slog.Default().
	Logger *slog.Logger
	// PollInterval is how often Subscribe channels are signalled for jobs
	// that come due by the passing of time. Default 1s.
	PollInterval time.Duration
	// RequestTimeout bounds one request to the server or to the
	// namespace's owner. Default 5s.
	RequestTimeout time.Duration
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
	if o.PollInterval < 0 || o.RequestTimeout < 0 {
		return o, fmt.Errorf("%w: poll interval and request timeout must not be negative", core.ErrInvalidArgument)
	}
	if o.PollInterval == 0 {
		o.PollInterval = time.Second
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 5 * time.Second
	}
	return o, nil
}

// Backend is a core.QueueBackend and core.Notifier whose state lives on
// the NATS server. It is safe for concurrent use; any number of Backends
// in any number of processes may share a namespace.
type Backend struct {
	opts   Options
	nc     *nats.Conn
	js     jetstream.JetStream
	kv     jetstream.Stream
	rq     jetstream.Stream
	log    *slog.Logger
	origin string
	ns     string

	clockMu    sync.Mutex
	anchor     time.Time // server timestamp of the newest probe
	anchorMono time.Time // when it was read, on the monotonic clock

	ownMu sync.Mutex
	own   *owner // non-nil while this Backend owns the namespace

	notify *notifier

	closeOnce sync.Once
	closed    chan struct{}
	bg        sync.WaitGroup
}

var (
	_ core.QueueBackend = (*Backend)(nil)
	_ core.Notifier     = (*Backend)(nil)
)

// Stream names of a namespace: the job store and the work queue of ready
// and lease entries.
func kvStream(ns string) string { return "BOSONKV_" + ns }
func rqStream(ns string) string { return "BOSONRQ_" + ns }

// legacyStream is the command-log stream of the layout before this one.
func legacyStream(ns string) string { return "BOSON_" + ns }

// New opens namespace opts.Namespace on nc, creating its streams when they
// do not exist. nc stays the caller's: Close does not close it. New fails
// with an error wrapping core.ErrUnsupported when the server is older than
// MinServerVersion or lacks JetStream, when it did not keep the stream
// configuration asked for, and when the namespace holds data of the
// command-log layout (stream BOSON_<namespace>), which this version does
// not read.
func New(ctx context.Context, nc *nats.Conn, opts Options) (*Backend, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: nil NATS connection", core.ErrInvalidArgument)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkServerVersion(nc); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("natsq: jetstream: %w", err)
	}
	if _, err := js.Stream(ctx, legacyStream(o.Namespace)); err == nil {
		return nil, fmt.Errorf("natsq: %w: namespace %s holds data of the command-log layout (stream %s), which this version does not read; "+
			"finish its jobs with the version that wrote them, or delete the stream (DeleteNamespace does)", core.ErrUnsupported, o.Namespace, legacyStream(o.Namespace))
	} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("natsq: look for the command-log stream: %w", err)
	}
	b := &Backend{opts: o, nc: nc, js: js, ns: o.Namespace, closed: make(chan struct{}),
		log: o.Logger.With("backend", "nats", "namespace", o.Namespace), origin: core.NewID(time.Now())}
	if err := b.ensureStreams(ctx); err != nil {
		return nil, err
	}
	if err := b.probe(ctx); err != nil {
		return nil, err
	}
	b.notify = newNotifier(b)
	b.bg.Add(2)
	go b.clockLoop()
	go b.notify.poll()
	return b, nil
}

// Close stops the Backend's background work; it gives up the ownership of
// the namespace, if it held it. Later calls fail with core.ErrClosed.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		close(b.closed)
		b.ownMu.Lock()
		o := b.own
		b.own = nil
		b.ownMu.Unlock()
		if o != nil {
			o.stop()
		}
		b.bg.Wait()
		b.notify.closeAll()
	})
	return nil
}

func (b *Backend) isClosed() error {
	select {
	case <-b.closed:
		return fmt.Errorf("natsq: %w", core.ErrClosed)
	default:
	}
	return nil
}

// Conn returns the NATS connection the Backend was opened on: the nc handed
// to New, which stays the caller's.
func (b *Backend) Conn() *nats.Conn { return b.nc }

// DeleteNamespace deletes the streams of namespace ns, and with them every
// job, run, checkpoint and config of it (also those of the command-log
// layout). Backends still open on it stop working. It is meant for tests
// and for decommissioning.
func DeleteNamespace(ctx context.Context, nc *nats.Conn, ns string) error {
	if err := core.ValidateName("namespace", ns); err != nil {
		return err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("natsq: jetstream: %w", err)
	}
	for _, s := range []string{kvStream(ns), rqStream(ns), legacyStream(ns)} {
		if err := js.DeleteStream(ctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("natsq: delete stream %s: %w", s, err)
		}
	}
	return nil
}

func (b *Backend) ensureStreams(ctx context.Context) error {
	cfgs := []jetstream.StreamConfig{
		{Name: kvStream(b.ns), Subjects: []string{"bk." + b.ns + ".>"}, Storage: jetstream.FileStorage, Replicas: b.opts.Replicas,
			// Direct gets of a replicated stream may answer from a follower
			// that has not applied the latest write: only one replica reads
			// directly, so every read sees every acknowledged write.
			Retention: jetstream.LimitsPolicy, MaxMsgsPerSubject: 1, AllowDirect: b.opts.Replicas == 1, Discard: jetstream.DiscardOld,
			Description: "boson job store, namespace " + b.ns},
		{Name: rqStream(b.ns), Subjects: []string{"bq." + b.ns + ".>"}, Storage: jetstream.FileStorage, Replicas: b.opts.Replicas,
			Retention: jetstream.WorkQueuePolicy, MaxMsgsPerSubject: -1, Description: "boson ready and lease entries, namespace " + b.ns},
	}
	for i, want := range cfgs {
		s, err := b.js.Stream(ctx, want.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			s, err = b.js.CreateStream(ctx, want)
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				s, err = b.js.Stream(ctx, want.Name)
			}
		}
		if err != nil {
			return fmt.Errorf("natsq: stream %s: %w", want.Name, err)
		}
		got := s.CachedInfo().Config
		if got.Replicas != want.Replicas || got.Retention != want.Retention || got.MaxMsgsPerSubject != want.MaxMsgsPerSubject || got.Storage != want.Storage {
			return fmt.Errorf("natsq: %w: stream %s has replicas %d, retention %v, %d messages per subject, %v storage; want %d, %v, %d, %v",
				core.ErrUnsupported, want.Name, got.Replicas, got.Retention, got.MaxMsgsPerSubject, got.Storage,
				want.Replicas, want.Retention, want.MaxMsgsPerSubject, want.Storage)
		}
		if i == 0 {
			b.kv = s
		} else {
			b.rq = s
		}
	}
	return nil
}

// untilClosed returns a context that also ends when the Backend closes.
func (b *Backend) untilClosed(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-b.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func checkServerVersion(nc *nats.Conn) error {
	v := nc.ConnectedServerVersion()
	if v == "" {
		return fmt.Errorf("natsq: %w: not connected to a server", core.ErrUnsupported)
	}
	if !versionAtLeast(v, 2, 9) {
		return fmt.Errorf("natsq: %w: server %s is older than %s", core.ErrUnsupported, v, MinServerVersion)
	}
	return nil
}

// versionAtLeast reports whether the semantic version v is major.minor or later.
func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
