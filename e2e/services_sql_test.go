package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/core"
	"github.com/jackc/pgx/v5/pgxpool"
)

func newSQLiteBackend(t testing.TB, clock core.Clock) core.QueueBackend {
	t.Helper()
	return openSQLiteBackend(t, clock, filepath.Join(t.TempDir(), "boson.db"), true)
}

// openSQLiteBackend opens (and migrates) the database file at path.
func openSQLiteBackend(t testing.TB, clock core.Clock, path string, _ bool) core.QueueBackend {
	t.Helper()
	ctx := context.Background()
	b, err := sqliteq.Open(ctx, path, sqliteq.Options{Clock: clock, Logger: quiet, PollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if err := b.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return b
}

func beginSQLiteTx(ctx context.Context, t testing.TB, b core.QueueBackend) (any, func() error, func() error) {
	tx, err := b.(*sqliteq.Backend).BeginTx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return tx, tx.Commit, tx.Rollback
}

func postgresURL() string {
	if url := os.Getenv("BOSON_TEST_POSTGRES_URL"); url != "" {
		return url
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

func newPostgresBackend(t testing.TB, clock core.Clock) core.QueueBackend {
	t.Helper()
	var r [6]byte
	_, _ = rand.Read(r[:])
	return openPostgresBackend(t, clock, "e2e_"+hex.EncodeToString(r[:]), true)
}

// openPostgresBackend opens (and migrates) a backend in schema; the owner
// drops the schema at cleanup.
func openPostgresBackend(t testing.TB, clock core.Clock, schema string, owner bool) core.QueueBackend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(postgresURL())
	if err != nil {
		t.Fatalf("postgres url: %v", err)
	}
	requireService(t, "postgres", net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))))
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := postgres.New(pool, postgres.Options{Schema: schema, Clock: clock, Logger: quiet, PollInterval: 200 * time.Millisecond})
	if err != nil {
		pool.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = b.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if owner {
			if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
				t.Logf("drop schema %s: %v", schema, err)
			}
		}
		pool.Close()
	})
	if err := b.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return b
}

func beginPostgresTx(ctx context.Context, t testing.TB, b core.QueueBackend) (any, func() error, func() error) {
	tx, err := b.(*postgres.Backend).Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return tx, func() error { return tx.Commit(ctx) }, func() error { return tx.Rollback(ctx) }
}
