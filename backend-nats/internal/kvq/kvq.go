package kvq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Options configure a Backend; the zero value is useful.
type Options struct {
	// Namespace names the streams; default "boson".
	Namespace string
	// Replicas of both streams: 1 (default) or 3 on a cluster.
	Replicas int
	// Clock dates ids and decides nothing. Nil is the process clock.
	Clock core.Clock
	// DecisionClock, when set, replaces the server's time in every
	// decision (tests that move time by hand).
	DecisionClock core.Clock
	// Limits bound what the backend accepts.
	Limits core.Limits
	// Logger receives diagnostics; nil is slog.Default().
	Logger *slog.Logger
	// PollInterval is how often subscribers are signalled for queues whose
	// jobs may have come due; default 1s.
	PollInterval time.Duration
	// RequestTimeout bounds one request to the server or to the owner;
	// default 5s.
	RequestTimeout time.Duration
}

func (o Options) withDefaults() (Options, error) {
	if o.Namespace == "" {
		o.Namespace = "boson"
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

// Backend is a core.QueueBackend whose state lives on the NATS server. It
// is safe for concurrent use; any number of Backends in any number of
// processes may share a namespace.
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

// Stream names of a namespace.
func kvStream(ns string) string { return "BOSONKV_" + ns }
func rqStream(ns string) string { return "BOSONRQ_" + ns }

// New opens namespace opts.Namespace on nc, creating its streams when they
// do not exist. nc stays the caller's.
func New(ctx context.Context, nc *nats.Conn, opts Options) (*Backend, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: nil NATS connection", core.ErrInvalidArgument)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("kvq: jetstream: %w", err)
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
		return fmt.Errorf("kvq: %w", core.ErrClosed)
	default:
	}
	return nil
}

// DeleteNamespace deletes both streams of namespace ns.
func DeleteNamespace(ctx context.Context, nc *nats.Conn, ns string) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	for _, s := range []string{kvStream(ns), rqStream(ns)} {
		if err := js.DeleteStream(ctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("kvq: delete stream %s: %w", s, err)
		}
	}
	return nil
}

func (b *Backend) ensureStreams(ctx context.Context) error {
	cfgs := []jetstream.StreamConfig{
		{Name: kvStream(b.ns), Subjects: []string{"bk." + b.ns + ".>"}, Storage: jetstream.FileStorage, Replicas: b.opts.Replicas,
			Retention: jetstream.LimitsPolicy, MaxMsgsPerSubject: 1, AllowDirect: true, Discard: jetstream.DiscardOld,
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
			return fmt.Errorf("kvq: stream %s: %w", want.Name, err)
		}
		got := s.CachedInfo().Config
		if got.Replicas != want.Replicas || got.Retention != want.Retention || got.MaxMsgsPerSubject != want.MaxMsgsPerSubject || got.Storage != want.Storage {
			return fmt.Errorf("kvq: %w: stream %s has replicas %d, retention %v, %d messages per subject, %v storage; want %d, %v, %d, %v",
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
