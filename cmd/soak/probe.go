package soak

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Probe reads a PostgreSQL server's settings and the statistics of the
// tables of one schema, and can hold the database's xmin horizon back. It
// keeps its own connections, apart from those of the queue under test.
type Probe struct {
	pool   *pgxpool.Pool
	url    string
	schema string
}

// NewProbe connects to rawURL (a postgres:// URL; a "schema" query option
// is dropped) to watch the tables of schema.
func NewProbe(ctx context.Context, rawURL, schema string) (*Probe, error) {
	clean, err := withoutParam(rawURL, "schema")
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(clean)
	if err != nil {
		return nil, fmt.Errorf("soak: probe URL: %w", err)
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("soak: probe: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("soak: probe: %w", err)
	}
	return &Probe{pool: pool, url: clean, schema: schema}, nil
}

// Close closes the probe's connections.
func (p *Probe) Close() { p.pool.Close() }

// Schema is the schema whose tables the probe reads.
func (p *Probe) Schema() string { return p.schema }

// Setting is one server setting as the server reports it.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// settingNames are the settings a soak reports: what decides vacuum,
// durability and memory.
var settingNames = []string{
	"server_version", "autovacuum", "autovacuum_naptime", "autovacuum_vacuum_scale_factor",
	"autovacuum_vacuum_threshold", "autovacuum_vacuum_insert_scale_factor", "autovacuum_vacuum_cost_limit",
	"autovacuum_vacuum_cost_delay", "autovacuum_max_workers", "fsync", "synchronous_commit",
	"full_page_writes", "shared_buffers", "max_connections", "max_wal_size",
}

// Settings returns the server's settings that bear on a soak, in a fixed
// order.
func (p *Probe) Settings(ctx context.Context) ([]Setting, error) {
	rows, err := p.pool.Query(ctx, `SELECT name, setting || coalesce(unit, '') FROM pg_settings WHERE name = ANY($1)`, settingNames)
	if err != nil {
		return nil, fmt.Errorf("soak: read settings: %w", err)
	}
	got := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, err
		}
		got[name] = value
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []Setting
	for _, n := range settingNames {
		if v, ok := got[n]; ok {
			out = append(out, Setting{Name: n, Value: v})
		}
	}
	return out, nil
}

// Tables are the summed statistics of a schema's tables
// (pg_stat_user_tables and the relation sizes).
type Tables struct {
	TableBytes  int64 `json:"table_bytes"`
	IndexBytes  int64 `json:"index_bytes"`
	LiveTuples  int64 `json:"live_tuples"`
	DeadTuples  int64 `json:"dead_tuples"`
	Updates     int64 `json:"updates"`
	HOTUpdates  int64 `json:"hot_updates"`
	Autovacuums int64 `json:"autovacuums"`
	// XminAge is the age in transactions of the oldest snapshot held in the
	// database (pg_stat_activity.backend_xmin), 0 when none is held.
	XminAge int64 `json:"xmin_age"`
}

// Tables reads the statistics of the probe's schema. The table size
// includes TOAST; the statistics lag the server by up to its stats delay.
func (p *Probe) Tables(ctx context.Context) (Tables, error) {
	var t Tables
	err := p.pool.QueryRow(ctx, `SELECT
		coalesce(sum(pg_table_size(relid)), 0)::bigint,
		coalesce(sum(pg_indexes_size(relid)), 0)::bigint,
		coalesce(sum(n_live_tup), 0)::bigint,
		coalesce(sum(n_dead_tup), 0)::bigint,
		coalesce(sum(n_tup_upd), 0)::bigint,
		coalesce(sum(n_tup_hot_upd), 0)::bigint,
		coalesce(sum(autovacuum_count), 0)::bigint,
		(SELECT coalesce(max(age(backend_xmin)), 0)::bigint FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid())
		FROM pg_stat_user_tables WHERE schemaname = $1`, p.schema).
		Scan(&t.TableBytes, &t.IndexBytes, &t.LiveTuples, &t.DeadTuples, &t.Updates, &t.HOTUpdates, &t.Autovacuums, &t.XminAge)
	if err != nil {
		return Tables{}, fmt.Errorf("soak: read table statistics: %w", err)
	}
	return t, nil
}

// Vacuum rewrites and analyzes every table of the probe's schema (VACUUM
// FULL), so that a load starts as on fresh tables, without the dead tuples
// or the grown files of an earlier one. It locks each table while it runs.
func (p *Probe) Vacuum(ctx context.Context) error {
	rows, err := p.pool.Query(ctx, `SELECT format('%I.%I', schemaname, relname) FROM pg_stat_user_tables WHERE schemaname = $1`, p.schema)
	if err != nil {
		return fmt.Errorf("soak: vacuum: %w", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("soak: vacuum: %w", err)
	}
	for _, t := range tables {
		if _, err := p.pool.Exec(ctx, `VACUUM (FULL, ANALYZE) `+t); err != nil {
			return fmt.Errorf("soak: vacuum %s: %w", t, err)
		}
	}
	return nil
}

// Hold is an open REPEATABLE READ transaction that has taken its snapshot,
// so that no vacuum in its database removes a row version that died after
// it began.
type Hold struct {
	conn *pgx.Conn
	tx   pgx.Tx
	// Xmin is the snapshot's xmin, as pg_stat_activity reports it.
	Xmin string
}

// HoldXmin opens a session, begins a REPEATABLE READ transaction and makes
// one read, which fixes its snapshot until Release.
func (p *Probe) HoldXmin(ctx context.Context) (*Hold, error) {
	conn, err := pgx.Connect(ctx, p.url)
	if err != nil {
		return nil, fmt.Errorf("soak: hold xmin: %w", err)
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("soak: hold xmin: %w", err)
	}
	h := &Hold{conn: conn, tx: tx}
	err = tx.QueryRow(ctx, `SELECT coalesce(backend_xmin::text, '') FROM pg_stat_activity WHERE pid = pg_backend_pid()`).Scan(&h.Xmin)
	if err == nil && h.Xmin == "" {
		err = errors.New("the transaction holds no snapshot")
	}
	if err != nil {
		_ = h.Release()
		return nil, fmt.Errorf("soak: hold xmin: %w", err)
	}
	return h, nil
}

// Release ends the transaction and closes its session.
func (h *Hold) Release() error {
	ctx := context.Background()
	err := h.tx.Rollback(ctx)
	return errors.Join(err, h.conn.Close(ctx))
}

// withoutParam returns rawURL without the query option name.
func withoutParam(rawURL, name string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return "", fmt.Errorf("soak: URL: %w", err)
	}
	q := u.Query()
	if q.Has(name) {
		q.Del(name)
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}
