package sqltest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boson-go/boson/conformance/testenv/testreq"
)

// pgbouncerPaths are where Debian's package installs the program, for
// when it is not on PATH.
var pgbouncerPaths = []string{"/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"}

// PgBouncer starts pgbouncer in transaction pooling mode in front of the
// server that upstream names, on a free loopback port, with trust
// authentication for upstream's user, and stops it at cleanup. It returns
// the connection string of upstream's database through the pooler. It
// skips t when the program is missing, or fails it when BOSON_TEST_REQUIRE
// requires pgbouncer. As root it runs pgbouncer as the postgres account
// (pgbouncer refuses to run as root).
func PgBouncer(t testing.TB, upstream string) string {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		for _, p := range pgbouncerPaths {
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				bin = p
				break
			}
		}
	}
	if bin == "" {
		Unavailable(t, testreq.PgBouncer, "pgbouncer is neither on PATH nor in /usr/sbin (apt-get install pgbouncer)")
	}
	up, err := pgx.ParseConfig(upstream)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := testreq.PostgresCredential()
	if err != nil {
		Unavailable(t, testreq.PgBouncer, err.Error())
	}
	dir, err := os.MkdirTemp("", "boson-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%d

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 500
default_pool_size = 8
server_reset_query =
ignore_startup_parameters = extra_float_digits
logfile = %s
`, up.Host, up.Port, port, filepath.Join(dir, "users.txt"), filepath.Join(dir, "pgbouncer.log"))
	files := map[string]string{"pgbouncer.ini": ini, "users.txt": strconv.Quote(up.User) + ` ""` + "\n"}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
	cmd.Dir = dir
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			break
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
			t.Fatalf("pgbouncer exited: %v\n%s", waitErr, log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgbouncer does not accept connections on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable&connect_timeout=5", up.User, addr, up.Database)
}
