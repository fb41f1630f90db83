package postgres

import (
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/boson-go/boson/core"
)

// DefaultSchema is the schema that holds the tables when Options.Schema is empty.
const DefaultSchema = "boson"

// DefaultPollInterval is how often a subscription ticks when no
// notification arrives, unless Options.PollInterval says otherwise.
const DefaultPollInterval = time.Second

// Options configures a Backend. The zero value is ready to use.
type Options struct {
	// Schema holds the backend's tables: 1 to 48 characters of lower-case
	// ASCII letters, digits and '_', not starting with a digit. Empty
	// means [DefaultSchema]. Migrate creates it when missing.
	Schema string
	// Clock decides leases, deadlines and due times. Nil means the
	// server's clock (now()).
	Clock core.Clock
	// Limits bounds payloads, headers and batches; zero fields take
	// [core.DefaultLimits].
	Limits core.Limits
	// Logger receives the backend's logs; nil means slog.Default().
	Logger *slog.Logger
	// PollInterval is how often subscriptions get a polling tick;
	// zero means [DefaultPollInterval] and a negative value turns the
	// ticks off.
	PollInterval time.Duration
	// ClaimRescan is how often a claim starts at the head of the claim
	// index instead of after the queue's claim cursor, which skips the
	// index entries of jobs this process claimed before (see the
	// package README). Zero means 10 seconds; a negative value turns the
	// cursors off, so that every claim starts at the head.
	ClaimRescan time.Duration
}

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,47}$`)

// withDefaults validates o and fills in defaults.
func (o Options) withDefaults() (Options, error) {
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if !schemaName.MatchString(o.Schema) {
		return o, fmt.Errorf("%w: schema %q must be 1 to 48 characters of a-z, 0-9 and '_', not starting with a digit",
			core.ErrInvalidArgument, o.Schema)
	}
	if err := o.Limits.Validate(); err != nil {
		return o, err
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}
