package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/boson-go/boson/conformance/testenv/testreq"
	"github.com/boson-go/boson/core"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestUniqueName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)
	seen := map[string]bool{}
	for _, prefix := range []string{"", "conformance", "9lives", "Hello World!", "a.b*c>d{e}", strings.Repeat("x", 200), "_x", "émoji"} {
		for range 200 {
			n := UniqueName(t, prefix)
			if !valid.MatchString(n) {
				t.Fatalf("UniqueName(%q) = %q, not a lowercase identifier", prefix, n)
			}
			if err := core.ValidateName("queue", n); err != nil {
				t.Fatalf("UniqueName(%q) = %q: %v", prefix, n, err)
			}
			if seen[n] {
				t.Fatalf("UniqueName returned %q twice", n)
			}
			seen[n] = true
		}
	}
	if n := UniqueName(t, "Sch"); !strings.HasPrefix(n, "sch_") {
		t.Fatalf("UniqueName(Sch) = %q, want the lowercased prefix first", n)
	}
}

func TestDecideEnvVar(t *testing.T) {
	started := false
	s := Service{Name: "svc", EnvVar: "SVC_URL", Start: func() (string, func(), error) {
		started = true
		return "local://", nil, nil
	}}
	d := decide(env(map[string]string{"SVC_URL": " redis://h:1/0 "}), s)
	if d.url != "redis://h:1/0" || d.source != "env" || d.release != nil {
		t.Fatalf("decide with the env var set = %+v", d)
	}
	if started {
		t.Fatal("the ladder started a server although the env var was set")
	}
}

func TestDecideSkip(t *testing.T) {
	s := Service{Name: "svc", EnvVar: "SVC_URL", Start: func() (string, func(), error) {
		return "", nil, fmt.Errorf("%w: svc-server is not on PATH", ErrUnavailable)
	}}
	d := decide(env(nil), s)
	if d.url != "" || d.fatal {
		t.Fatalf("decide without any rung = %+v, want a skip", d)
	}
	for _, want := range []string{"no svc service", "SVC_URL is not set", "svc-server is not on PATH"} {
		if !strings.Contains(d.message, want) {
			t.Fatalf("skip message %q does not say %q", d.message, want)
		}
	}
	if strings.Contains(d.message, "\n") {
		t.Fatalf("skip message %q is not one line", d.message)
	}
}

func TestDecideRequire(t *testing.T) {
	s := Service{Name: "postgres", EnvVar: "PG_URL"}
	for req, fatal := range map[string]bool{
		"": false, "all": true, "ALL": true, "postgres": true, "redis, postgres": true, "redis,nats": false,
		"postgres-server": false, "redis-server,nats-cluster": false,
		"postgress": true, // a typo is refused, not taken for "nothing required"
	} {
		d := decide(env(map[string]string{EnvRequire: req}), s)
		if d.fatal != fatal || d.url != "" {
			t.Fatalf("%s=%q: fatal %v, want %v", EnvRequire, req, d.fatal, fatal)
		}
		if fatal && !strings.Contains(d.message, EnvRequire) {
			t.Fatalf("failure message %q does not name %s", d.message, EnvRequire)
		}
	}
	d := decide(env(map[string]string{EnvRequire: "all", "PG_URL": "postgres://x"}), s)
	if d.url != "postgres://x" || d.fatal {
		t.Fatalf("a required service given by env var: %+v", d)
	}
	d = decide(env(map[string]string{EnvRequire: "postgress", "PG_URL": "postgres://x"}), s)
	if !d.fatal || !strings.Contains(d.message, `"postgress"`) {
		t.Fatalf("a malformed %s with the service given by env var: %+v", EnvRequire, d)
	}
}

func TestDecideSharesStartedServer(t *testing.T) {
	starts, stops := 0, 0
	s := Service{Name: "shared-test", Start: func() (string, func(), error) {
		starts++
		return fmt.Sprintf("svc://%d", starts), func() { stops++ }, nil
	}}
	a := decide(env(nil), s)
	b := decide(env(nil), s)
	if a.url != "svc://1" || b.url != a.url || a.source != "local" || starts != 1 {
		t.Fatalf("two lookups: %q %q with %d starts, want one shared server", a.url, b.url, starts)
	}
	a.release()
	a.release() // idempotent
	if stops != 0 {
		t.Fatal("the server stopped while a test still used it")
	}
	b.release()
	if stops != 1 {
		t.Fatalf("%d stops after the last release, want 1", stops)
	}
	if c := decide(env(nil), s); c.url != "svc://2" {
		t.Fatalf("lookup after the last release = %q, want a new server", c.url)
	} else {
		c.release()
	}
}

func TestDecideStartErrorFallsThrough(t *testing.T) {
	s := Service{Name: "svc", Start: func() (string, func(), error) {
		return "", nil, errors.New("exited: bad\nconfig")
	}}
	d := decide(env(nil), s)
	if d.url != "" || !strings.Contains(d.message, "local: exited: bad config") {
		t.Fatalf("decide after a failed start = %+v", d)
	}
}

func TestDockerRungWithoutEngine(t *testing.T) {
	if os.Getenv("DOCKER_HOST") != "" {
		t.Skip("DOCKER_HOST is set: an engine may answer")
	}
	if _, err := os.Stat("/var/run/docker.sock"); err == nil {
		t.Skip("a Docker socket exists: an engine may answer")
	}
	_, _, err := RedisService.Docker.start()
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("docker rung without an engine: %v, want ErrUnavailable", err)
	}
}

// helperEnv makes TestHelperLookupMissing run inside a subprocess.
const helperEnv = "BOSON_TESTENV_HELPER"

// TestHelperLookupMissing looks up a service that no rung provides. It
// does so only as a subprocess of TestLookupSkipOrFail, and passes at once
// otherwise.
func TestHelperLookupMissing(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		return
	}
	Lookup(t, Service{Name: "ghost", EnvVar: "BOSON_TEST_GHOST_URL"})
	t.Fatal("Lookup returned without a service")
}

func TestLookupSkipOrFail(t *testing.T) {
	run := func(require string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLookupMissing$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"=1", EnvRequire+"="+require, "BOSON_TEST_GHOST_URL=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("")
	if err != nil || !strings.Contains(out, "--- SKIP: TestHelperLookupMissing") || !strings.Contains(out, "testenv: no ghost service") {
		t.Fatalf("without %s: err %v, output:\n%s", EnvRequire, err, out)
	}
	out, err = run("all")
	if err == nil || !strings.Contains(out, "--- FAIL: TestHelperLookupMissing") || !strings.Contains(out, "testenv: no ghost service") {
		t.Fatalf("with %s=all: err %v, output:\n%s", EnvRequire, err, out)
	}
}

func TestRedisEnvVar(t *testing.T) {
	t.Setenv(EnvRedis, "redis://elsewhere:7000/3")
	if u := Redis(t); u != "redis://elsewhere:7000/3" {
		t.Fatalf("Redis with %s set = %q", EnvRedis, u)
	}
}

// The local-server tests exercise the second rung; where it cannot run
// they skip, unless BOSON_TEST_REQUIRE requires the server program
// (redis-server, postgres-server): the service itself may be provided by
// the environment variable.

// requireLocal clears the service's environment variable and sets
// BOSON_TEST_REQUIRE to require the service only when the caller's
// BOSON_TEST_REQUIRE requires its server program.
func requireLocal(t *testing.T, envVar, service, program string) {
	required := testreq.Required(t, program)
	t.Setenv(envVar, "")
	t.Setenv(EnvRequire, "")
	if required {
		t.Setenv(EnvRequire, service)
	}
}

func TestRedisStartsServer(t *testing.T) {
	requireLocal(t, EnvRedis, testreq.Redis, testreq.RedisServer)
	u := Redis(t)
	if err := redisPing(u); err != nil {
		t.Fatalf("the ladder's Redis at %s does not answer: %v", u, err)
	}
	if u2 := Redis(t); u2 != u {
		t.Fatalf("a second lookup in one process gave %s, want the shared %s", u2, u)
	}
}

func TestPostgresStartsServer(t *testing.T) {
	requireLocal(t, EnvPostgres, testreq.Postgres, testreq.PostgresServer)
	u := Postgres(t)
	if err := pgPing(u); err != nil {
		t.Fatalf("the ladder's Postgres at %s does not answer: %v", u, err)
	}
}

func TestKeepServersUntilStopAll(t *testing.T) {
	r := &registry{servers: map[string]*server{}, keep: true}
	starts, stops := 0, 0
	start := func() (string, func(), error) { starts++; return "svc://x", func() { stops++ }, nil }
	_, release, _ := r.acquire("k", start)
	release()
	_, release, _ = r.acquire("k", start)
	release()
	if starts != 1 || stops != 0 {
		t.Fatalf("with keep: %d starts, %d stops; want 1, 0", starts, stops)
	}
	r.stopAll()
	if stops != 1 {
		t.Fatalf("stopAll stopped %d servers, want 1", stops)
	}
}
