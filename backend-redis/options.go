package redisq

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/boson-go/boson/core"
)

// DefaultPrefix is the key prefix of a backend whose Options name none.
const DefaultPrefix = "boson"

// DefaultPollInterval is how often a subscription signals on its own when
// Options.PollInterval is zero.
const DefaultPollInterval = time.Second

// Options configure a Backend. The zero value is useful: prefix "boson",
// the Redis server's clock, the default limits and slog's default logger.
type Options struct {
	// Prefix starts every key, so that several applications can share one
	// Redis. It follows the rules of core.ValidateName. Default "boson".
	Prefix string
	// Clock, when set, decides every lease, deadline and due time instead
	// of the server's TIME; the time is passed to each script. Tests set a
	// *core.ManualClock here.
	Clock core.Clock
	// Limits bound payloads, headers and batches.
	Limits core.Limits
	// Logger receives the backend's few log lines. Default slog.Default().
	Logger *slog.Logger
	// PollInterval is how often a subscription from Subscribe signals even
	// without a notification, which makes up for notifications lost while
	// the pub/sub connection was down. Zero means DefaultPollInterval; a
	// negative value turns the periodic signal off.
	PollInterval time.Duration
}

func (o Options) withDefaults() (Options, error) {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if err := core.ValidateName("prefix", o.Prefix); err != nil {
		return o, err
	}
	if err := o.Limits.Validate(); err != nil {
		return o, err
	}
	o.Limits = o.Limits.WithDefaults()
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	return o, nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{core.ErrInvalidArgument}, args...)...)
}
