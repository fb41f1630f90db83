// Package sqltest finds the test servers and makes isolated schemas and
// files for the backend-sql tests.
package sqltest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boson-go/boson/conformance/testenv"
	"github.com/boson-go/boson/conformance/testenv/testreq"
)

// DefaultPostgresURL is the server the project's machines run.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// PostgresURL returns the server to test against, from the project's
// service ladder (BOSON_TEST_POSTGRES_URL, a private server, a container),
// or skips t (fails it when BOSON_TEST_REQUIRE requires postgres).
func PostgresURL(t testing.TB) string {
	t.Helper()
	return testenv.Postgres(t)
}

// Unavailable skips t for want of service (one of testreq's names, such
// as testreq.PostgresServer), or fails it when BOSON_TEST_REQUIRE requires
// the service.
func Unavailable(t testing.TB, service, why string) {
	t.Helper()
	testreq.Unavailable(t, service, why)
}

// Pool opens a small pool on url, closed at cleanup.
func Pool(t testing.TB, url string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Schema returns a fresh schema name and drops the schema at cleanup
// (registered before any later cleanup, so it runs after them).
func Schema(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	name := "t_" + RandomHex(8)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS "`+name+`" CASCADE`); err != nil {
			t.Logf("dropping schema %s: %v", name, err)
		}
	})
	return name
}

// RandomHex returns 2n random hex digits.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
