package postgres

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boson-go/boson/backend-sql/internal/engine"
	"github.com/boson-go/boson/core"
)

type queueBackend = core.QueueBackend

// Backend is a boson queue backend on PostgreSQL. It implements
// [core.QueueBackend], [core.Notifier], [core.TxEnqueuer],
// [core.TxController] and the
// operations capabilities [core.RunReader], [core.JobSearcher],
// [core.TaskLister] and [core.JobDeleter], fan-in ([core.Awaiter]), and is safe
// for concurrent use by many goroutines and many processes.
type Backend struct {
	queueBackend
	e         *engine.Engine
	pool      *pgxpool.Pool
	schema    string
	listenCfg *pgx.ConnConfig // nil: no listener (a transaction pooler without ListenConnString)

	listenOnce sync.Once
	stopListen context.CancelFunc
	listenDone chan struct{}

	opsBackend
}

// New returns a backend on pool, which the caller keeps owning: Close
// does not close it. Call [Backend.Migrate] before first use.
func New(pool *pgxpool.Pool, opts Options) (*Backend, error) {
	if pool == nil {
		return nil, fmt.Errorf("boson/postgres: %w: pool is nil", core.ErrInvalidArgument)
	}
	return newBackend(pool, false, opts)
}

// Open connects to connString (a URL or key=value string that pgxpool
// accepts) and returns a backend that owns its pool and closes it on
// Close. Call [Backend.Migrate] before first use.
func Open(ctx context.Context, connString string, opts Options) (*Backend, error) {
	if _, err := opts.withDefaults(); err != nil {
		return nil, fmt.Errorf("boson/postgres: open: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("boson/postgres: open: %w: %v", core.ErrInvalidArgument, err)
	}
	if opts.Pooled && cfg.ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("boson/postgres: open: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("boson/postgres: open: %w", err)
	}
	b, err := newBackend(pool, true, opts)
	if err != nil {
		pool.Close()
	}
	return b, err
}

func newBackend(pool *pgxpool.Pool, owned bool, opts Options) (*Backend, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("boson/postgres: %w", err)
	}
	if o.Pooled && pool.Config().ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement {
		return nil, fmt.Errorf("boson/postgres: %w: Options.Pooled needs a pool whose DefaultQueryExecMode does not prepare named statements"+
			" (cache_describe, describe_exec, exec or simple_protocol), not cache_statement", core.ErrInvalidArgument)
	}
	var listen *pgx.ConnConfig
	switch {
	case o.ListenConnString != "":
		if listen, err = pgx.ParseConfig(o.ListenConnString); err != nil {
			return nil, fmt.Errorf("boson/postgres: %w: ListenConnString: %v", core.ErrInvalidArgument, err)
		}
	case !o.Pooled:
		listen = pool.Config().ConnConfig
	}
	e := engine.New(engine.Config{
		Dialect:      engine.Postgres{},
		Store:        &engine.PgxStore{Pool: pool, Owned: owned},
		Prefix:       `"` + o.Schema + `".`,
		Channel:      "boson_" + o.Schema,
		Clock:        o.Clock,
		Limits:       o.Limits,
		Logger:       o.Logger,
		PollInterval: o.PollInterval,
		ClaimRescan:  o.ClaimRescan,
	})
	b := &Backend{queueBackend: e, e: e, pool: pool, schema: o.Schema, listenCfg: listen}
	e.OnClose(b.closeListener)
	b.opsBackend = e
	return b, nil
}

// Schema returns the schema that holds the backend's tables.
func (b *Backend) Schema() string { return b.schema }

// Pool returns the pool the backend uses.
func (b *Backend) Pool() *pgxpool.Pool { return b.pool }

// Migrate creates the schema and applies every embedded migration it has
// not applied yet, in one transaction under a transaction-scoped advisory
// lock, so that processes starting at once take turns. It is safe to
// call on every start.
func (b *Backend) Migrate(ctx context.Context) error {
	return b.migrateTo(ctx, 0)
}

// migrateTo is Migrate up to version upTo (0: the last).
func (b *Backend) migrateTo(ctx context.Context, upTo int) error {
	_, err := b.e.MigrateTo(ctx, "postgres", upTo, func(ctx context.Context, q engine.Querier) error {
		if _, err := q.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", "boson.migrate."+b.schema); err != nil {
			return err
		}
		_, err := q.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS "`+b.schema+`"`)
		return err
	})
	return err
}

// EnqueueTx implements [core.TxEnqueuer]: it stores reqs inside tx, a
// pgx.Tx (a *pgxpool.Tx or any other implementation), under a savepoint.
// The jobs become visible, and their notification is sent, only when
// the caller commits; they vanish if it rolls back. The savepoint, the
// enqueue and the release go out as one pipelined batch: one round trip.
// A refused batch (invalid, conflicting or rate limited) leaves tx
// usable; rolling back to the savepoint costs it a second round trip. When a task of
// the batch has rate limits, its config row stays locked until tx ends,
// so other enqueues of that task wait for it: keep such transactions
// short.
func (b *Backend) EnqueueTx(ctx context.Context, tx any, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	t, ok := tx.(pgx.Tx)
	if !ok || t == nil {
		return nil, fmt.Errorf("boson/postgres: enqueue: %w: tx is %T, not a pgx.Tx", core.ErrInvalidArgument, tx)
	}
	return b.e.EnqueueIn(ctx, engine.PgxQuerier{C: t}, reqs)
}

// Subscribe implements [core.Notifier]. The first call starts the
// listener connection, unless the backend has none (Options.Pooled
// without Options.ListenConnString): its subscriptions then wake on
// their polling ticks and on this process's own writes.
func (b *Backend) Subscribe(queue string) (<-chan struct{}, func()) {
	if b.listenCfg != nil {
		b.listenOnce.Do(b.startListener)
	}
	return b.e.Subscribe(queue)
}

// Close implements [core.QueueBackend]: it stops the listener and, when
// the backend opened its own pool, closes the pool.
func (b *Backend) Close() error { return b.e.Close() }

var (
	_ core.QueueBackend = (*Backend)(nil)
	_ core.Notifier     = (*Backend)(nil)
	_ core.TxEnqueuer   = (*Backend)(nil)
)
