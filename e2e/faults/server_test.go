package faults_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boson-go/boson/conformance/testenv/testreq"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
)

// server is a store server this test owns: a process it can kill and
// start again on the same port and data directory.
type server struct {
	t    testing.TB
	name string
	// port is the server's port and aux a second one for a server that
	// needs it (a NATS node's route port), both chosen by launch; url is
	// the server's URL.
	port, aux int
	url       string
	// args returns the command that runs the server on its ports; urlOf
	// its URL on port.
	args  func(port, aux int) *exec.Cmd
	urlOf func(port int) string
	ready func(ctx context.Context, url string) error
	// crash is the signal that stops the server without a clean shutdown.
	crash syscall.Signal

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// errPortTaken reports a server that exited because another process took
// its port between freePort and the server's bind.
var errPortTaken = errors.New("port taken")

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// start runs the server on s.port and waits until it answers.
func (s *server) start() error {
	cmd := s.args(s.port, s.aux)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	out, err := os.Create(filepath.Join(s.t.TempDir(), s.name+".log"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); out.Close(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		err := s.ready(actx, s.url)
		acancel()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			b, _ := os.ReadFile(out.Name())
			if strings.Contains(strings.ToLower(string(b)), "address already in use") {
				return fmt.Errorf("%s exited: %w: %s", s.name, errPortTaken, lastLines(string(b), 5))
			}
			return fmt.Errorf("%s exited: %s", s.name, lastLines(string(b), 5))
		case <-ctx.Done():
			s.stop(syscall.SIGKILL)
			b, _ := os.ReadFile(out.Name())
			return fmt.Errorf("%s did not answer: %v: %s", s.name, err, lastLines(string(b), 5))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop signals the server and waits for it to exit.
func (s *server) stop(sig syscall.Signal) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// restartFault crashes the server and starts it again on the same data.
func restartFault(s *server) func(r *run) string {
	return func(r *run) string {
		running := r.running()
		s.stop(s.crash)
		if err := s.start(); err != nil {
			r.t.Fatalf("restart %s: %v", s.name, err)
		}
		return fmt.Sprintf("crashed (%v) and restarted %s (%d jobs running)", s.crash, s.name, running)
	}
}

// launchAttempts bounds the starts of a server whose port another process
// took meanwhile.
const launchAttempts = 5

// launch picks the servers' ports and starts them all (at once: a
// cluster answers only once a quorum runs), again on fresh ports when
// another process took one, and stops them when the test ends. A server
// that cannot start skips the test, or fails it when BOSON_TEST_REQUIRE
// requires service.
func launch(t testing.TB, service string, ss ...*server) {
	t.Helper()
	var err error
	for attempt := 1; attempt <= launchAttempts; attempt++ {
		for _, s := range ss {
			s.t, s.port, s.aux = t, freePort(t), freePort(t)
			s.url = s.urlOf(s.port)
		}
		errs := make(chan error, len(ss))
		for _, s := range ss {
			go func() { errs <- s.start() }()
		}
		err = nil
		for range ss {
			if e := <-errs; e != nil && (err == nil || errors.Is(e, errPortTaken)) {
				err = e
			}
		}
		if err == nil {
			t.Cleanup(func() {
				for _, s := range ss {
					s.stop(syscall.SIGKILL)
				}
			})
			return
		}
		for _, s := range ss {
			s.stop(syscall.SIGKILL)
		}
		if !errors.Is(err, errPortTaken) {
			break
		}
		t.Logf("%v; starting again on other ports", err)
	}
	testreq.Unavailable(t, service, err.Error())
}

// serverBinary returns the path of program, from PATH or else from the
// directories given; it skips t, or fails it when BOSON_TEST_REQUIRE
// requires service, when there is none.
func serverBinary(t testing.TB, service, program string, dirs ...string) string {
	t.Helper()
	if bin, err := exec.LookPath(program); err == nil {
		return bin
	}
	for _, d := range dirs {
		if bin := filepath.Join(d, program); fileExists(bin) {
			return bin
		}
	}
	testreq.Unavailable(t, service, fmt.Sprintf("%s is neither on PATH nor in %s", program, strings.Join(dirs, ", ")))
	return ""
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// redisServer is a private redis-server with every write in the
// append-only file, fsynced before the reply.
func redisServer(t testing.TB) *server {
	bin := serverBinary(t, testreq.RedisServer, "redis-server", "/usr/bin", "/usr/local/bin")
	dir := t.TempDir()
	s := &server{name: "redis", crash: syscall.SIGKILL,
		args: func(port, _ int) *exec.Cmd {
			return exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
				"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--protected-mode", "no", "--daemonize", "no")
		},
		urlOf: func(port int) string { return fmt.Sprintf("redis://127.0.0.1:%d/0", port) },
		ready: func(ctx context.Context, url string) error {
			opt, _ := redis.ParseURL(url)
			c := redis.NewClient(opt)
			defer c.Close()
			return c.Ping(ctx).Err()
		},
	}
	launch(t, testreq.RedisServer, s)
	return s
}

// natsServerBinary returns the path of nats-server (Debian installs it in
// /usr/sbin, which a normal user's PATH may lack).
func natsServerBinary(t testing.TB, service string) string {
	return serverBinary(t, service, "nats-server", "/usr/sbin", "/usr/local/bin")
}

// natsServer is a private nats-server with JetStream in a store directory
// that survives its restarts.
func natsServer(t testing.TB) *server {
	bin := natsServerBinary(t, testreq.NATSServer)
	dir := t.TempDir()
	s := &server{name: "nats", crash: syscall.SIGKILL,
		args: func(port, _ int) *exec.Cmd {
			return exec.Command(bin, "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", dir)
		},
		urlOf: func(port int) string { return fmt.Sprintf("nats://127.0.0.1:%d", port) },
		ready: natsReady,
	}
	launch(t, testreq.NATSServer, s)
	return s
}

// postgresServer is a private Postgres cluster made with initdb, of any
// installed major version, with fsync on; a crash is an immediate
// shutdown (SIGQUIT), after which the server replays its write-ahead log.
func postgresServer(t testing.TB) *server {
	bin, err := testreq.PostgresBinDir()
	if err != nil {
		testreq.Unavailable(t, testreq.PostgresServer, err.Error())
	}
	cred, err := testreq.PostgresCredential()
	if err != nil {
		testreq.Unavailable(t, testreq.PostgresServer, err.Error())
	}
	dir, err := os.MkdirTemp("", "boson-faults-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		testreq.Unavailable(t, testreq.PostgresServer, fmt.Sprintf("%s: %v: %s", initdb, err, lastLines(string(out), 3)))
	}
	s := &server{name: "postgres", crash: syscall.SIGQUIT,
		args: func(port, _ int) *exec.Cmd {
			cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
				"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+dir, "-c", "max_connections=100")
			cmd.Dir = dir
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			return cmd
		},
		urlOf: func(port int) string {
			return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
		},
		ready: func(ctx context.Context, url string) error {
			c, err := pgx.Connect(ctx, url)
			if err != nil {
				return err
			}
			defer c.Close(ctx)
			return c.Ping(ctx)
		},
	}
	launch(t, testreq.PostgresServer, s)
	return s
}

// natsCluster is three private nats-server nodes with JetStream, each on
// its own store directory, routed to each other.
func natsCluster(t testing.TB) (url string, nodes []*server) {
	bin := natsServerBinary(t, testreq.NATSCluster)
	// Each node listens for clients on its port and for routes on its aux
	// port.
	nodes = make([]*server, 3)
	for i := range nodes {
		dir := t.TempDir()
		nodes[i] = &server{name: fmt.Sprintf("nats-node%d", i), crash: syscall.SIGKILL,
			args: func(port, aux int) *exec.Cmd {
				var routes []string
				for _, n := range nodes {
					routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", n.aux))
				}
				return exec.Command(bin, "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", dir,
					"-n", fmt.Sprintf("node%d", i), "--cluster_name", "boson", "--cluster", routes[i],
					"--routes", strings.Join(routes, ","))
			},
			urlOf: func(port int) string { return fmt.Sprintf("nats://127.0.0.1:%d", port) },
			ready: natsReady,
		}
	}
	launch(t, testreq.NATSCluster, nodes...)
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.url)
	}
	return strings.Join(urls, ","), nodes
}

// nodeRestartFault crashes one node of a cluster, in turn, and starts it
// again on its store directory.
func nodeRestartFault(nodes []*server) func(r *run) string {
	var n int
	return func(r *run) string {
		node := nodes[n%len(nodes)]
		n++
		return restartFault(node)(r)
	}
}

// natsReady reports whether the NATS server at url answers with JetStream.
func natsReady(ctx context.Context, url string) error {
	nc, err := nats.Connect(url, nats.Timeout(time.Second))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		return err
	}
	_, err = js.AccountInfo(nats.Context(ctx))
	return err
}
