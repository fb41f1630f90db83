package faults_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
)

// server is a store server this test owns: a process it can kill and
// start again on the same port and data directory.
type server struct {
	t     testing.TB
	name  string
	url   string
	args  func() *exec.Cmd
	ready func(ctx context.Context) error
	// crash is the signal that stops the server without a clean shutdown.
	crash syscall.Signal

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// start runs the server and waits until it answers.
func (s *server) start() error {
	cmd := s.args()
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
		err := s.ready(actx)
		acancel()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			b, _ := os.ReadFile(out.Name())
			return fmt.Errorf("%s exited: %s", s.name, lastLines(string(b), 5))
		case <-ctx.Done():
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

// startServer starts s and stops it when the test ends.
func startServer(t testing.TB, s *server) *server {
	t.Helper()
	s.t = t
	if err := s.start(); err != nil {
		t.Skipf("%s: %v", s.name, err)
	}
	t.Cleanup(func() { s.stop(syscall.SIGKILL) })
	return s
}

// redisServer is a private redis-server with every write in the
// append-only file, fsynced before the reply.
func redisServer(t testing.TB) *server {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not on PATH")
	}
	dir, port := t.TempDir(), freePort(t)
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	return startServer(t, &server{name: "redis", url: url, crash: syscall.SIGKILL,
		args: func() *exec.Cmd {
			return exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
				"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--protected-mode", "no", "--daemonize", "no")
		},
		ready: func(ctx context.Context) error {
			opt, _ := redis.ParseURL(url)
			c := redis.NewClient(opt)
			defer c.Close()
			return c.Ping(ctx).Err()
		},
	})
}

// natsServer is a private nats-server with JetStream in a store directory
// that survives its restarts.
func natsServer(t testing.TB) *server {
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		if _, err2 := os.Stat("/usr/sbin/nats-server"); err2 != nil {
			t.Skip("nats-server is not installed")
		}
		bin = "/usr/sbin/nats-server"
	}
	dir, port := t.TempDir(), freePort(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	return startServer(t, &server{name: "nats", url: url, crash: syscall.SIGKILL,
		args: func() *exec.Cmd {
			return exec.Command(bin, "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", dir)
		},
		ready: natsReady(url),
	})
}

// postgresServer is a private Postgres cluster made with initdb, with
// fsync on; a crash is an immediate shutdown (SIGQUIT), after which the
// server replays its write-ahead log.
func postgresServer(t testing.TB) *server {
	bin := "/usr/lib/postgresql/15/bin"
	if _, err := os.Stat(filepath.Join(bin, "initdb")); err != nil {
		t.Skip("no Postgres 15 binaries")
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("running as root without a postgres account")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
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
		t.Skipf("initdb: %v: %s", err, lastLines(string(out), 3))
	}
	port := freePort(t)
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return startServer(t, &server{name: "postgres", url: url, crash: syscall.SIGQUIT,
		args: func() *exec.Cmd {
			cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
				"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+dir, "-c", "max_connections=100")
			cmd.Dir = dir
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			return cmd
		},
		ready: func(ctx context.Context) error {
			c, err := pgx.Connect(ctx, url)
			if err != nil {
				return err
			}
			defer c.Close(ctx)
			return c.Ping(ctx)
		},
	})
}

// natsCluster is three private nats-server nodes with JetStream, each on
// its own store directory, routed to each other.
func natsCluster(t testing.TB) (url string, nodes []*server) {
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		if _, err2 := os.Stat("/usr/sbin/nats-server"); err2 != nil {
			t.Skip("nats-server is not installed")
		}
		bin = "/usr/sbin/nats-server"
	}
	var ports, cports []int
	var urls, routes []string
	for i := 0; i < 3; i++ {
		ports, cports = append(ports, freePort(t)), append(cports, freePort(t))
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", cports[i]))
	}
	// Start all three before waiting: JetStream answers once a meta leader
	// is elected, which needs a quorum.
	nodes = make([]*server, 3)
	for i := range nodes {
		dir, i := t.TempDir(), i
		nodes[i] = &server{t: t, name: fmt.Sprintf("nats-node%d", i), url: urls[i], crash: syscall.SIGKILL,
			args: func() *exec.Cmd {
				return exec.Command(bin, "-a", "127.0.0.1", "-p", strconv.Itoa(ports[i]), "-js", "-sd", dir,
					"-n", fmt.Sprintf("node%d", i), "--cluster_name", "boson", "--cluster", routes[i],
					"--routes", strings.Join(routes, ","))
			},
			ready: natsReady(urls[i]),
		}
	}
	errs := make(chan error, 3)
	for _, n := range nodes {
		go func() { errs <- n.start() }()
	}
	for range nodes {
		if err := <-errs; err != nil {
			for _, n := range nodes {
				n.stop(syscall.SIGKILL)
			}
			t.Skipf("nats cluster: %v", err)
		}
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.stop(syscall.SIGKILL)
		}
	})
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
func natsReady(url string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
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
}
