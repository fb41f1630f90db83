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
	// Pooled says that the pool's connections go through a pooler in
	// transaction mode, such as PgBouncer with pool_mode = transaction,
	// where consecutive transactions of one client may run on different
	// server sessions. Statements then must not rely on named prepared
	// statements: [Open] sets the pool's DefaultQueryExecMode to
	// pgx.QueryExecModeCacheDescribe (unnamed statements, result
	// descriptions cached per connection, still one round trip), and [New]
	// refuses a pool that caches named statements. A LISTEN on such a
	// session would lose its notifications, so the listener connects to
	// ListenConnString instead, or, without one, subscriptions rely on
	// their polling ticks and on the wake-ups of this process.
	Pooled bool
	// ListenConnString is the connection string of the session connection
	// that LISTENs for notifications: straight to the server when the
	// pool goes through a transaction-mode pooler (or to a pooler in
	// session mode). Empty means the pool's own connection settings,
	// unless Pooled is set.
	ListenConnString string
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
