package sqliteq_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/core"
)

// TestMain turns the test binary into a worker process when the
// multi-process test starts it that way (target: the database path).
func TestMain(m *testing.M) {
	if os.Getenv(sqltest.EnvWorker) != "" {
		os.Exit(sqltest.WorkerMain(func(ctx context.Context, path string) (core.QueueBackend, error) {
			// The race detector slows the transpiled SQLite engine many times
			// over; give lock waits the room a lease TTL of minutes allows.
			return sqliteq.Open(ctx, path, sqliteq.Options{MaxBusyWait: 30 * time.Second})
		}, "mp"))
	}
	code := m.Run()
	removeTemplate()
	os.Exit(code)
}
