package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boson-go/boson/cmd/internal/store"
	"github.com/boson-go/boson/core"
)

// result is the outcome of one in-process run of the command.
type result struct {
	code           int
	stdout, stderr string
}

// run runs the boson command in-process with args and environment env.
func run(t *testing.T, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, Env{
		Stdin:  strings.NewReader(stdin),
		Stdout: &out,
		Stderr: &errb,
		Getenv: func(k string) string { return env[k] },
	})
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// must runs the command and fails the test unless it exits with want.
func must(t *testing.T, want int, args ...string) result {
	t.Helper()
	r := run(t, nil, "", args...)
	if r.code != want {
		t.Fatalf("boson %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
	}
	return r
}

func decode[T any](t *testing.T, r result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("decode %T from %q: %v", v, r.stdout, err)
	}
	return v
}

// durableStores returns the URLs of the stores the tests use: a SQLite file
// always, and each service named by BOSON_TEST_POSTGRES_URL,
// BOSON_TEST_REDIS_URL or BOSON_TEST_NATS_URL, each in a fresh schema,
// prefix or namespace that is deleted when the test ends.
func durableStores(t *testing.T) map[string]string {
	t.Helper()
	urls := map[string]string{"sqlite": "sqlite:" + filepath.Join(t.TempDir(), "jobs.db")}
	suffix := strings.ToLower(core.NewID(core.SystemClock{}.Now()))[16:]
	for kind, spec := range map[string]struct{ env, param string }{
		"postgres": {"BOSON_TEST_POSTGRES_URL", "schema=clitest_" + suffix},
		"redis":    {"BOSON_TEST_REDIS_URL", "prefix=clitest-" + suffix},
		"nats":     {"BOSON_TEST_NATS_URL", "namespace=clitest-" + suffix},
	} {
		base := os.Getenv(spec.env)
		if base == "" {
			continue
		}
		sep := "?"
		if strings.Contains(base, "?") {
			sep = "&"
		}
		u := base + sep + spec.param
		urls[kind] = u
		t.Cleanup(func() {
			st, err := store.Open(context.Background(), u, store.Options{DropOnClose: true})
			if err != nil {
				t.Logf("clean up %s: %v", kind, err)
				return
			}
			_ = st.Close()
		})
	}
	return urls
}
