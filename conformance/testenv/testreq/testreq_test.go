package testreq

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestParseAndHas(t *testing.T) {
	cases := []struct {
		value    string
		required []string
		not      []string
	}{
		{"", nil, Services},
		{" , ", nil, Services},
		{"all", Services, nil},
		{"ALL", Services, nil},
		{"postgres", []string{Postgres, PostgresServer}, []string{Redis, RedisServer, NATS, NATSCluster, Chromium}},
		{"postgres-server", []string{PostgresServer}, []string{Postgres, Redis}},
		{"redis", []string{Redis, RedisServer, RedisCluster}, []string{Postgres, NATS, NATSServer}},
		{"redis-cluster", []string{RedisCluster}, []string{Redis, RedisServer}},
		{" Redis-Server , nats ", []string{RedisServer, NATS, NATSServer, NATSCluster}, []string{Redis, RedisCluster, Postgres}},
		{"nats-cluster,chromium", []string{NATSCluster, Chromium}, []string{NATS, NATSServer}},
		{"pgbouncer", []string{PgBouncer}, []string{Postgres, PostgresServer}},
		{"redis,all", Services, nil},
	}
	for _, c := range cases {
		s, err := Parse(c.value)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.value, err)
		}
		for _, svc := range c.required {
			if !s.Has(svc) {
				t.Errorf("%s=%q does not require %s", Env, c.value, svc)
			}
		}
		for _, svc := range c.not {
			if s.Has(svc) {
				t.Errorf("%s=%q requires %s", Env, c.value, svc)
			}
		}
	}
	// A service name outside the list is required only by "all".
	if s, _ := Parse("all"); !s.Has("mysql") {
		t.Error("all does not require an unlisted service")
	}
	if s, _ := Parse("redis"); s.Has("redisx") {
		t.Error("redis requires redisx, which is not of its family")
	}
}

func TestParseRefusesUnknownNames(t *testing.T) {
	for _, v := range []string{"postgress", "all,postgress", "redis;nats", "1", "redis-", "-server", "redis cluster"} {
		_, err := Parse(v)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse(%q) = %v, want ErrMalformed", v, err)
			continue
		}
		if !strings.Contains(err.Error(), Env) || !strings.Contains(err.Error(), "postgres-server") {
			t.Errorf("Parse(%q) error %q does not name the variable and the known services", v, err)
		}
	}
}

// helperEnv makes TestHelperUnavailable run inside a subprocess.
const helperEnv = "BOSON_TESTREQ_HELPER"

// TestHelperUnavailable declares redis-server unavailable. It does so only
// as a subprocess of TestUnavailableSkipsOrFails, and passes otherwise.
func TestHelperUnavailable(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		return
	}
	Unavailable(t, RedisServer, "redis-server is not on PATH")
	t.Fatal("Unavailable returned")
}

func TestUnavailableSkipsOrFails(t *testing.T) {
	for _, c := range []struct{ require, want string }{
		{"", "--- SKIP: TestHelperUnavailable"},
		{"postgres,nats", "--- SKIP: TestHelperUnavailable"},
		{"redis-cluster", "--- SKIP: TestHelperUnavailable"},
		{"all", "--- FAIL: TestHelperUnavailable"},
		{"redis", "--- FAIL: TestHelperUnavailable"},
		{"nats, redis-server", "--- FAIL: TestHelperUnavailable"},
		{"postgress", "--- FAIL: TestHelperUnavailable"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperUnavailable$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"=1", Env+"="+c.require)
		out, err := cmd.CombinedOutput()
		if !strings.Contains(string(out), c.want) || (err == nil) != strings.Contains(c.want, "SKIP") {
			t.Errorf("%s=%q: err %v, want %q in:\n%s", Env, c.require, err, c.want, out)
		}
		if !strings.Contains(string(out), "redis-server is not on PATH") && !strings.Contains(string(out), "postgress") {
			t.Errorf("%s=%q: the output does not say why:\n%s", Env, c.require, out)
		}
	}
}
