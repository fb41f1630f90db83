// Package extest runs the example programs from their tests: each with a
// deadline, its output captured, and the servers it needs found through
// conformance/testenv.
package extest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/conformance/testenv"
)

// Deadline bounds one run of an example in a test. Every example finishes
// in a few seconds; the bound leaves room for a loaded machine.
const Deadline = 45 * time.Second

// RunFunc is the shape of every example's run function.
type RunFunc func(ctx context.Context, stdout io.Writer, args []string) error

// Run runs fn with args under Deadline and returns what it printed. It fails
// t when fn returns an error.
func Run(t testing.TB, fn RunFunc, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	var out bytes.Buffer
	start := time.Now()
	err := fn(ctx, &out, args)
	t.Logf("%v in %v; output:\n%s", args, time.Since(start).Round(time.Millisecond), out.String())
	if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return out.String()
}

// Contains fails t for every want that out lacks.
func Contains(t testing.TB, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q", w)
		}
	}
}

// Lacks fails t for every unwanted string that out holds.
func Lacks(t testing.TB, out string, unwanted ...string) {
	t.Helper()
	for _, u := range unwanted {
		if strings.Contains(out, u) {
			t.Errorf("output holds %q", u)
		}
	}
}

// PostgresURL returns BOSON_TEST_POSTGRES_URL or a server from the testenv
// ladder; it skips t (or fails it under BOSON_TEST_REQUIRE) when there is none.
func PostgresURL(t testing.TB) string { return testenv.Postgres(t) }

// RedisURL returns BOSON_TEST_REDIS_URL or a server from the testenv ladder.
func RedisURL(t testing.TB) string { return testenv.Redis(t) }

// NATSURL returns BOSON_TEST_NATS_URL or a server from the testenv ladder.
func NATSURL(t testing.TB) string { return testenv.NATS(t, nil) }

// Name returns a schema, key prefix or namespace that no other test uses.
func Name(t testing.TB, prefix string) string { return testenv.UniqueName(t, prefix) }
