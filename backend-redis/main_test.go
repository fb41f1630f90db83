package redisq

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

// quietLogger drops go-redis's own log lines (dial failures while a test
// server restarts on purpose); the tests check the errors themselves.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{})
	if os.Getenv(workerEnv) != "" {
		os.Exit(workerMain())
	}
	code := m.Run()
	stopCluster()
	os.Exit(code)
}
