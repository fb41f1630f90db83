package postgres_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/core"
)

// TestMain turns the test binary into a worker process when the
// multi-process test starts it that way (target "schema url").
func TestMain(m *testing.M) {
	if os.Getenv(sqltest.EnvWorker) != "" {
		os.Exit(sqltest.WorkerMain(func(ctx context.Context, target string) (core.QueueBackend, error) {
			schema, url, _ := strings.Cut(target, " ")
			cfg, err := pgxpool.ParseConfig(url)
			if err != nil {
				return nil, err
			}
			cfg.MaxConns = 2
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				return nil, err
			}
			return postgres.New(pool, postgres.Options{Schema: schema})
		}, "mp"))
	}
	os.Exit(m.Run())
}
