package boson_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The test binary is also the subprocess of the executor bridge's
	// tests (see bridge_test.go).
	if os.Getenv(bridgeChildEnv) != "" {
		os.Exit(bridgeChild())
	}
	goleak.VerifyTestMain(m)
}
