package redisq

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		os.Exit(workerMain())
	}
	code := m.Run()
	stopCluster()
	os.Exit(code)
}
