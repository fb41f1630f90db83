// Package testreq reads BOSON_TEST_REQUIRE, the list of services whose
// absence fails a test instead of skipping it. Every test helper of the
// project that skips for want of a server, a binary or a program asks this
// package first, so that one value means the same thing everywhere.
//
// The value is empty (nothing is required), "all", or a comma-separated
// list of service names (case and spaces are ignored):
//
//	BOSON_TEST_REQUIRE=all
//	BOSON_TEST_REQUIRE=postgres,redis-server
//
// A name covers its own service and every service of its family: "redis"
// covers "redis-server" and "redis-cluster" too, "redis-server" covers
// only the binary. A name that is not one of [Services] is refused, so a
// typo cannot quietly require nothing.
//
// The package also finds the programs that private servers run with
// ([PostgresBinDir], [PostgresCredential]). It imports only the standard
// library, so that any module's tests can use it without the container
// client that testenv brings.
package testreq

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// Env is the environment variable this package reads.
const Env = "BOSON_TEST_REQUIRE"

// The services BOSON_TEST_REQUIRE can name.
const (
	// Postgres is a PostgreSQL server to connect to.
	Postgres = "postgres"
	// PostgresServer is the PostgreSQL server programs (initdb, pg_ctl,
	// postgres) that tests run private servers with.
	PostgresServer = "postgres-server"
	// Redis is a Redis server to connect to.
	Redis = "redis"
	// RedisServer is the redis-server program that tests run private
	// servers with.
	RedisServer = "redis-server"
	// RedisCluster is a private Redis Cluster started from redis-server.
	RedisCluster = "redis-cluster"
	// NATS is a NATS server with JetStream to connect to.
	NATS = "nats"
	// NATSServer is the nats-server program that tests run private
	// servers with.
	NATSServer = "nats-server"
	// NATSCluster is a private cluster of nats-server nodes.
	NATSCluster = "nats-cluster"
	// Chromium is the headless browser the dashboard's test drives.
	Chromium = "chromium"
	// PgBouncer is Debian's pgbouncer program, which tests start in
	// transaction pooling mode in front of a PostgreSQL server.
	PgBouncer = "pgbouncer"
)

// Services lists every name BOSON_TEST_REQUIRE accepts besides "all".
var Services = []string{Postgres, PostgresServer, Redis, RedisServer, RedisCluster, NATS, NATSServer, NATSCluster, Chromium, PgBouncer}

// ErrMalformed reports a BOSON_TEST_REQUIRE value that names an unknown
// service.
var ErrMalformed = errors.New("testreq: malformed " + Env)

// Set is a parsed BOSON_TEST_REQUIRE value. The zero Set requires nothing.
type Set struct {
	all   bool
	names []string
}

// Parse parses a BOSON_TEST_REQUIRE value. Empty entries are ignored; an
// entry that is neither "all" nor one of [Services] gives an error wrapping
// [ErrMalformed] that names it.
func Parse(value string) (Set, error) {
	var s Set
	for _, f := range strings.Split(value, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		switch {
		case f == "":
		case f == "all":
			s.all = true
		case slices.Contains(Services, f):
			s.names = append(s.names, f)
		default:
			return Set{}, fmt.Errorf("%w: %s=%q names %q; use all or a comma-separated list of %s",
				ErrMalformed, Env, value, f, strings.Join(Services, ", "))
		}
	}
	return s, nil
}

// Has reports whether the set requires service: it holds "all", the
// service's name, or the name of its family (the part of the name before
// its first '-'). Names are compared without regard to case.
func (s Set) Has(service string) bool {
	if s.all {
		return true
	}
	service = strings.ToLower(service)
	family, _, _ := strings.Cut(service, "-")
	for _, n := range s.names {
		if n == service || n == family {
			return true
		}
	}
	return false
}

// All reports whether the set is "all".
func (s Set) All() bool { return s.all }

// Required reports whether BOSON_TEST_REQUIRE, as the process sees it,
// requires service. A malformed value fails t.
func Required(t testing.TB, service string) bool {
	t.Helper()
	s, err := Parse(os.Getenv(Env))
	if err != nil {
		t.Fatal(err)
	}
	return s.Has(service)
}

// Unavailable ends t for want of service: it fails t when BOSON_TEST_REQUIRE
// requires the service, and skips it otherwise. why says what is missing,
// in one line.
func Unavailable(t testing.TB, service, why string) {
	t.Helper()
	if Required(t, service) {
		t.Fatalf("%s is required (%s=%s) but unavailable: %s", service, Env, os.Getenv(Env), why)
	}
	t.Skipf("%s unavailable: %s", service, why)
}
