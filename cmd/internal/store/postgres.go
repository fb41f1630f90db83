package store

import (
	"context"
	"fmt"
	"net/url"

	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// openPostgres opens "postgres://...?schema=NAME"; other query options go
// to pgx (sslmode, pool_max_conns, ...).
func openPostgres(ctx context.Context, raw string, opts Options) (*Store, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, invalidURL(raw, err.Error())
	}
	schema := takeParam(u, "schema")
	if schema == "" {
		schema = postgres.DefaultSchema
	}
	if opts.Isolate {
		schema = schema + "_" + uniqueSuffix()
	}
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, invalidURL(raw, err.Error())
	}
	s := &Store{Kind: "postgres"}
	s.wireFn = s.wire.Load
	cfg.ConnConfig.Tracer = &pgCounter{n: &s.wire}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect postgres %s: %w", u.Redacted(), err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect postgres %s: %w", u.Redacted(), err)
	}
	b, err := postgres.New(pool, postgres.Options{Schema: schema})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres %s: %w", u.Redacted(), err)
	}
	s.Backend, s.migrate, s.schema = b, b.Migrate, b
	s.Location = u.Redacted() + " schema " + schema
	s.Schema = schema
	s.onClose(func() error { pool.Close(); return nil })
	if opts.drops() {
		s.isolated = true
		s.onClose(func() error {
			_, err := pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`)
			return err
		})
	}
	s.onClose(b.Close)
	return s, nil
}

// pgCounter counts the statements a pool sends.
type pgCounter struct{ n interface{ Add(int64) int64 } }

func (c *pgCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *pgCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *pgCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (c *pgCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) { c.n.Add(1) }

func (c *pgCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (c *pgCounter) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *pgCounter) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}
