// Package testenv finds the external services that boson's store-backed
// tests need — PostgreSQL, Redis, NATS — following one ladder:
//
//  1. an environment variable holding a URL (BOSON_TEST_POSTGRES_URL,
//     BOSON_TEST_REDIS_URL, BOSON_TEST_NATS_URL);
//  2. a private server that the test process starts itself: redis-server
//     from PATH, or initdb and postgres of any installed major version
//     ([testreq.PostgresBinDir]), on a free loopback port in a temporary
//     directory, or whatever starter the caller hands in (for example an
//     in-process NATS server);
//  3. a container run with dockertest, when a Docker engine answers a ping;
//  4. otherwise the test is skipped with one line saying what was tried.
//
// With BOSON_TEST_REQUIRE=all (as CI sets it) a missing service fails the
// test instead of skipping it; BOSON_TEST_REQUIRE may also list service
// names, for example "postgres,redis-server". Package [testreq] parses the
// value, for this package and for every other helper that skips.
//
// A server that the ladder starts is shared by every test of the process
// that asks for the same service, and stopped when the last of them ends.
// Tests isolate themselves inside it with [UniqueName]: a schema, key
// prefix or stream namespace of their own.
package testenv

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/boson-go/boson/conformance/testenv/testreq"
)

// Environment variables the ladder reads.
const (
	EnvPostgres = "BOSON_TEST_POSTGRES_URL"
	EnvRedis    = "BOSON_TEST_REDIS_URL"
	EnvNATS     = "BOSON_TEST_NATS_URL"
	// EnvRequire turns a missing service into a test failure: "all", or a
	// comma-separated list of service names (see [testreq]).
	EnvRequire = testreq.Env
)

// ErrUnavailable reports that a rung of the ladder cannot provide the
// service here (no binary, no engine); the ladder moves on to the next.
// It is [testreq.ErrUnavailable], which the program finders return.
var ErrUnavailable = testreq.ErrUnavailable

// Service describes one external service and how to obtain it.
type Service struct {
	// Name identifies the service in messages and in BOSON_TEST_REQUIRE,
	// for example "nats".
	Name string
	// EnvVar names the environment variable that may hold its URL.
	EnvVar string
	// Start, when set, starts a private server and returns its URL and a
	// function that stops it. It returns an error wrapping ErrUnavailable
	// when it cannot run here. The server is shared by the whole process.
	Start func() (url string, stop func(), err error)
	// Docker, when set, describes a container to run when a Docker engine
	// answers.
	Docker *Container
}

// Lookup returns a URL of the service s, climbing the ladder described in
// the package documentation. It skips t (or fails it, when the service is
// required) when no rung provides the service.
func Lookup(t testing.TB, s Service) string {
	t.Helper()
	d := decide(os.Getenv, s)
	switch {
	case d.url != "":
		if d.release != nil {
			t.Cleanup(d.release)
		}
		if d.source != "env" {
			t.Logf("testenv: %s from the %s rung at %s", s.Name, d.source, d.url)
		}
		return d.url
	case d.fatal:
		t.Fatal(d.message)
	default:
		t.Skip(d.message)
	}
	return ""
}

// decision is the outcome of climbing the ladder.
type decision struct {
	url     string
	source  string // "env", "local" or "docker"
	release func() // drops this test's hold on a shared server
	message string // why there is no URL
	fatal   bool   // the service is required
}

// rung is one step of the ladder: a name and a way to start a server.
type rung struct {
	name  string
	start func() (url string, stop func(), err error)
}

// rungs lists the ladder below the environment variable for s.
func (s Service) rungs() []rung {
	var rs []rung
	if s.Start != nil {
		rs = append(rs, rung{"local", s.Start})
	}
	if s.Docker != nil {
		c := *s.Docker
		rs = append(rs, rung{"docker", c.start})
	}
	return rs
}

// decide climbs the ladder for s with getenv; it has no other inputs, so
// tests can check every outcome.
func decide(getenv func(string) string, s Service) decision {
	req, err := testreq.Parse(getenv(EnvRequire))
	if err != nil {
		return decision{fatal: true, message: "testenv: " + err.Error()}
	}
	if s.EnvVar != "" {
		if u := strings.TrimSpace(getenv(s.EnvVar)); u != "" {
			return decision{url: u, source: "env"}
		}
	}
	var tried []string
	if s.EnvVar != "" {
		tried = append(tried, s.EnvVar+" is not set")
	}
	for _, r := range s.rungs() {
		u, release, err := shared.acquire(s.Name+"/"+r.name, r.start)
		if err == nil {
			return decision{url: u, source: r.name, release: release}
		}
		tried = append(tried, fmt.Sprintf("%s: %v", r.name, oneLine(err)))
	}
	d := decision{fatal: req.Has(s.Name)}
	d.message = fmt.Sprintf("testenv: no %s service (%s)", s.Name, strings.Join(tried, "; "))
	if d.fatal {
		d.message += "; " + EnvRequire + " requires it"
	}
	return d
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// registry shares started servers between the tests of one process.
type registry struct {
	mu      sync.Mutex
	servers map[string]*server
	keep    bool // servers outlive their last user until stopAll (see Main)
}

type server struct {
	url  string
	stop func()
	refs int
}

var shared = &registry{servers: map[string]*server{}}

// acquire returns the running server called key, starting it when none
// runs, and a release function that stops it after its last user.
func (r *registry) acquire(key string, start func() (string, func(), error)) (string, func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.servers[key]
	if !ok {
		u, stop, err := start()
		if err != nil {
			return "", nil, err
		}
		if stop == nil {
			stop = func() {}
		}
		s = &server{url: u, stop: stop}
		r.servers[key] = s
	}
	s.refs++
	var once sync.Once
	return s.url, func() {
		once.Do(func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			s.refs--
			if s.refs == 0 && !r.keep {
				delete(r.servers, key)
				s.stop()
			}
		})
	}, nil
}

// stopAll stops every server the ladder started.
func (r *registry) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, s := range r.servers {
		delete(r.servers, key)
		s.stop()
	}
}

// Main runs a package's tests with the servers the ladder starts kept for
// the whole run, instead of being stopped whenever no test holds them, and
// stops them at the end. Call it from TestMain when many sequential tests
// would otherwise start and stop a local server each:
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
func Main(m *testing.M) int {
	shared.mu.Lock()
	shared.keep = true
	shared.mu.Unlock()
	defer shared.stopAll()
	return m.Run()
}
