// Package store turns a store URL into a core.QueueBackend for the boson
// command. One URL names one backend:
//
//	mem:                                   in-process, lost at exit
//	sqlite:path/to/jobs.db                 a SQLite file (created if missing)
//	sqlite::memory: (or sqlite:)           a temporary SQLite file, deleted on Close
//	postgres://user@host:5432/db?schema=s  PostgreSQL, tables in schema s (default boson)
//	redis://host:6379/0?prefix=p           Redis, keys under prefix p (default boson)
//	nats://host:4222?namespace=n           NATS JetStream, namespace n (default boson)
//
// Extra query options: sqlite accepts synchronous=FULL|NORMAL.
package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/core"
)

// DefaultURL is the store used when neither a flag nor BOSON_URL names one:
// a SQLite file in the working directory.
const DefaultURL = "sqlite:boson.db"

// Options adjust how Open connects.
type Options struct {
	// Isolate makes Open use a fresh, uniquely named schema, key prefix,
	// namespace or temporary file below the one the URL names, and Close
	// delete it with everything in it. Benchmarks use it so that runs do
	// not see each other's jobs.
	Isolate bool
	// DropOnClose makes Close delete the schema, key prefix, namespace or
	// SQLite file that the URL names, with everything in it. Tests use it
	// to clean up after themselves.
	DropOnClose bool
}

// drops reports whether Close must delete the store's data.
func (o Options) drops() bool { return o.Isolate || o.DropOnClose }

// Store is an open backend with what the command needs around it.
type Store struct {
	// Backend is the queue backend.
	Backend core.QueueBackend
	// Kind is "mem", "sqlite", "postgres", "redis" or "nats".
	Kind string
	// Location describes where the data lives, without credentials.
	Location string
	// Schema is the PostgreSQL schema that holds the tables; empty for
	// other stores.
	Schema string

	wire     atomic.Int64
	wireFn   func() int64
	migrate  func(ctx context.Context) error
	schema   schemaVersions
	closers  []func() error
	isolated bool
}

// NeedsMigrate reports whether the store has a schema that Migrate creates.
func (s *Store) NeedsMigrate() bool { return s.migrate != nil }

// Migrate creates or upgrades the store's tables. It is idempotent and does
// nothing on stores without a schema.
func (s *Store) Migrate(ctx context.Context) error {
	if s.migrate == nil {
		return nil
	}
	if err := s.migrate(ctx); err != nil {
		return fmt.Errorf("migrate %s: %w", s.Kind, err)
	}
	return nil
}

// Migration is one schema version as the store and this build see it
// (the same type for SQLite and Postgres).
type Migration = postgres.MigrationStatus

// schemaVersions reads and undoes a SQL store's schema versions.
type schemaVersions interface {
	MigrationStatus(ctx context.Context) ([]Migration, error)
	MigrateDown(ctx context.Context, to int) ([]int, error)
}

// MigrationStatus returns the versions this build embeds and those the
// store records, in version order, without changing anything; nil for
// stores without a schema.
func (s *Store) MigrationStatus(ctx context.Context) ([]Migration, error) {
	if s.schema == nil {
		return nil, nil
	}
	st, err := s.schema.MigrationStatus(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate status %s: %w", s.Kind, err)
	}
	return st, nil
}

// MigrateDown undoes the applied versions above to, or changes nothing
// and returns an error wrapping core.ErrInvalidState when one of them
// cannot be undone safely. It returns the versions it undid; none on
// stores without a schema.
func (s *Store) MigrateDown(ctx context.Context, to int) ([]int, error) {
	if s.schema == nil {
		return nil, nil
	}
	undone, err := s.schema.MigrateDown(ctx, to)
	if err != nil {
		return nil, fmt.Errorf("migrate down %s: %w", s.Kind, err)
	}
	return undone, nil
}

// WireCalls returns how many commands or statements this process has sent
// to the store server so far, and false for stores without a server (mem,
// sqlite), where only backend calls can be counted.
func (s *Store) WireCalls() (int64, bool) {
	if s.wireFn == nil {
		return 0, false
	}
	return s.wireFn(), true
}

// Close closes the backend and the clients Open created, and deletes an
// isolated namespace.
func (s *Store) Close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		if err := s.closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Store) onClose(f func() error) { s.closers = append(s.closers, f) }

// Open connects to the store named by rawURL. Errors caused by the URL wrap
// core.ErrInvalidArgument.
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	rawURL = strings.TrimSpace(rawURL)
	if rawURL == "" {
		rawURL = DefaultURL
	}
	scheme, rest, ok := strings.Cut(rawURL, ":")
	if !ok {
		return nil, invalidURL(rawURL, "missing scheme; want mem:, sqlite:PATH, postgres://, redis:// or nats://")
	}
	switch strings.ToLower(scheme) {
	case "mem", "memory":
		return openMem(rest)
	case "sqlite", "sqlite3", "file":
		return openSQLite(ctx, rawURL, rest, opts)
	case "postgres", "postgresql":
		return openPostgres(ctx, rawURL, opts)
	case "redis", "rediss":
		return openRedis(ctx, rawURL, opts)
	case "nats", "tls":
		return openNATS(ctx, rawURL, opts)
	}
	return nil, invalidURL(rawURL, fmt.Sprintf("unknown scheme %q; want mem, sqlite, postgres, redis or nats", scheme))
}

func invalidURL(raw, reason string) error {
	return fmt.Errorf("%w: store URL %q: %s", core.ErrInvalidArgument, Redact(raw), reason)
}

// Redact returns raw with any password replaced by "xxxxx".
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}

// takeParam removes the query parameter name from u and returns its value.
// Unknown parameters stay for the driver to read.
func takeParam(u *url.URL, name string) string {
	q := u.Query()
	v := q.Get(name)
	if q.Has(name) {
		q.Del(name)
		u.RawQuery = q.Encode()
	}
	return v
}

// uniqueSuffix returns a short random lowercase suffix for isolated names.
func uniqueSuffix() string {
	id := strings.ToLower(core.NewID(core.SystemClock{}.Now()))
	return id[len(id)-10:]
}
