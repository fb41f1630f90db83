package testenv

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boson-go/boson/conformance/testenv/testreq"
)

// PostgresService is the Postgres rung set: BOSON_TEST_POSTGRES_URL, a
// server made with initdb and postgres from [testreq.PostgresBinDir], or the
// postgres:16 image.
var PostgresService = Service{
	Name:   "postgres",
	EnvVar: EnvPostgres,
	Start:  startPostgres,
	Docker: &Container{
		Repository: "postgres", Tag: "16-alpine", Port: "5432/tcp",
		Env: []string{"POSTGRES_HOST_AUTH_METHOD=trust", "POSTGRES_DB=test"},
		Cmd: []string{"postgres", "-c", "fsync=off", "-c", "max_connections=300"},
		URL: func(hostPort string) string {
			return "postgres://postgres@" + hostPort + "/test?sslmode=disable"
		},
		Ready: pgPing,
	},
}

// Postgres returns the URL of a PostgreSQL server that trusts user
// postgres (postgres://postgres@host:port/db?sslmode=disable), or skips t
// when there is none (fails it when BOSON_TEST_REQUIRE asks for postgres).
func Postgres(t testing.TB) string {
	t.Helper()
	return Lookup(t, PostgresService)
}

// startPostgres makes a throw-away cluster with initdb and runs postgres
// on it, on a free loopback port, with durability off.
func startPostgres() (string, func(), error) {
	bin, err := testreq.PostgresBinDir()
	if err != nil {
		return "", nil, err
	}
	cred, err := testreq.PostgresCredential()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "boson-pg-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			cleanup()
			return "", nil, err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust",
		"--no-sync", "-E", "UTF8", "--locale=C")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("initdb: %v: %s", err, lastLine(string(out)))
	}
	port, err := freePort()
	if err != nil {
		cleanup()
		return "", nil, err
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	c, err := startChild(cmd)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	u := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	stop := func() {
		c.stop(syscall.SIGINT) // fast shutdown
		cleanup()
	}
	if err := c.waitReady(func() error { return pgPing(u) }); err != nil {
		stop()
		return "", nil, err
	}
	return u, stop, nil
}

// pgPing opens a session with the startup message of protocol 3.0 and
// succeeds once the server reports ready for query. It needs trust
// authentication, which is what the ladder's servers use.
func pgPing(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "5432")
	}
	userName := u.User.Username()
	if userName == "" {
		userName = "postgres"
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" {
		db = userName
	}
	conn, err := net.DialTimeout("tcp", host, 2*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))

	var body []byte
	body = binary.BigEndian.AppendUint32(body, 3<<16) // protocol 3.0
	for _, kv := range []string{"user", userName, "database", db} {
		body = append(append(body, kv...), 0)
	}
	body = append(body, 0)
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(body)+4))
	if _, err := conn.Write(append(msg, body...)); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	for {
		typ, err := r.ReadByte()
		if err != nil {
			return err
		}
		var n uint32
		if err := binary.Read(r, binary.BigEndian, &n); err != nil {
			return err
		}
		if n < 4 || n > 1<<20 {
			return fmt.Errorf("postgres sent a message of %d bytes", n)
		}
		payload := make([]byte, n-4)
		if _, err := io.ReadFull(r, payload); err != nil {
			return err
		}
		switch typ {
		case 'E':
			return fmt.Errorf("postgres: %s", pgErrorText(payload))
		case 'R':
			if len(payload) < 4 || binary.BigEndian.Uint32(payload) != 0 {
				return errors.New("postgres asks for a password; the ladder needs trust authentication")
			}
		case 'Z':
			_, _ = conn.Write([]byte{'X', 0, 0, 0, 4})
			return nil
		}
	}
}

// pgErrorText extracts the message field of an ErrorResponse.
func pgErrorText(p []byte) string {
	for len(p) > 1 {
		field := p[0]
		end := 1
		for end < len(p) && p[end] != 0 {
			end++
		}
		if field == 'M' {
			return string(p[1:end])
		}
		p = p[min(end+1, len(p)):]
	}
	return "error"
}
