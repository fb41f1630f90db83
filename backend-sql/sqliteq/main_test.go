package sqliteq_test

import (
	"context"
	"os"
	"testing"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/core"
)

// TestMain turns the test binary into a worker process when the
// multi-process test starts it that way (target: the database path).
func TestMain(m *testing.M) {
	if os.Getenv(sqltest.EnvWorker) != "" {
		os.Exit(sqltest.WorkerMain(func(ctx context.Context, path string) (core.QueueBackend, error) {
			return sqliteq.Open(ctx, path, sqliteq.Options{})
		}, "mp"))
	}
	os.Exit(m.Run())
}
