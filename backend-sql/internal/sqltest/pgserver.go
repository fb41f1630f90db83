package sqltest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/boson-go/boson/conformance/testenv/testreq"
)

// PGServer is a PostgreSQL server that a test owns: its own data
// directory and a free loopback port.
type PGServer struct {
	t    testing.TB
	bin  string // the directory of initdb, pg_ctl and postgres
	dir  string
	data string
	Port int
}

// StartPGServer initialises and starts a server of whatever major version
// is installed (testreq.PostgresBinDir), stopped and removed at cleanup.
// It skips the test when the programs are missing, or fails it when
// BOSON_TEST_REQUIRE requires postgres-server. When the test runs as root
// the server runs as the postgres user.
func StartPGServer(t testing.TB) *PGServer {
	t.Helper()
	bin, err := testreq.PostgresBinDir()
	if err != nil {
		Unavailable(t, testreq.PostgresServer, err.Error())
	}
	dir, err := os.MkdirTemp("", "boson-pg-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	s := &PGServer{t: t, bin: bin, dir: dir, data: filepath.Join(dir, "data")}
	t.Cleanup(func() {
		_ = s.run("pg_ctl", "-D", s.data, "-m", "immediate", "stop")
		_ = os.RemoveAll(dir)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	if err := s.run("initdb", "-D", s.data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"); err != nil {
		t.Fatal(err)
	}
	s.Start()
	return s
}

// URL is the connection string of the server's postgres database.
func (s *PGServer) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", s.Port)
}

// Start starts the server and waits until it accepts connections.
func (s *PGServer) Start() {
	s.t.Helper()
	opts := "-p " + strconv.Itoa(s.Port) + " -k " + s.dir + " -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=20"
	if err := s.run("pg_ctl", "-D", s.data, "-o", opts, "-l", filepath.Join(s.dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		s.t.Fatalf("%v\n%s", err, log)
	}
}

// Stop stops the server at once, like a crash: no checkpoint, and every
// connection is cut.
func (s *PGServer) Stop() {
	s.t.Helper()
	if err := s.run("pg_ctl", "-D", s.data, "-m", "immediate", "-w", "stop"); err != nil {
		s.t.Fatal(err)
	}
}

func (s *PGServer) run(name string, args ...string) error {
	bin := filepath.Join(s.bin, name)
	var cmd *exec.Cmd
	if u, err := user.Current(); err == nil && u.Uid == "0" {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", bin}, args...)...)
	} else {
		cmd = exec.Command(bin, args...)
	}
	cmd.Dir = s.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %v: %w\n%s", name, args, err, out)
	}
	return nil
}
