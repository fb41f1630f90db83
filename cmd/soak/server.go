package soak

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a private PostgreSQL cluster made by StartServer: its own data
// directory under a temporary directory, on a free loopback port, with the
// server's default settings (autovacuum on) but for where it listens.
type Server struct {
	// URL connects to the cluster's postgres database as user postgres
	// (trust authentication, loopback only).
	URL string
	// Version is the major version of the binaries that made it.
	Version string
	// Dir is the temporary directory holding the data and the log.
	Dir string

	bin  string
	data string
	cred *syscall.Credential
}

// ServerOptions adjust StartServer.
type ServerOptions struct {
	// Settings are extra "name=value" server settings (postgres -c). Empty
	// means the defaults of initdb, which is what the soak runs against.
	Settings []string
	// BinDir holds initdb and pg_ctl; empty means `pg_config --bindir`,
	// else the newest /usr/lib/postgresql/*/bin.
	BinDir string
}

// StartServer makes a fresh cluster with initdb and starts it with pg_ctl.
// As root it runs both as the postgres account, since neither runs as root.
// Stop removes everything it made.
func StartServer(ctx context.Context, opts ServerOptions) (*Server, error) {
	bin := opts.BinDir
	if bin == "" {
		var err error
		if bin, err = findBinDir(); err != nil {
			return nil, err
		}
	}
	for _, s := range opts.Settings {
		if name, _, ok := strings.Cut(s, "="); !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("soak: server setting %q: want name=value", s)
		}
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "boson-soak-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, bin: bin, data: filepath.Join(dir, "data"), cred: cred, Version: filepath.Base(filepath.Dir(bin))}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := s.pgTool(ctx, "initdb", "-D", s.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	port, err := freeLoopbackPort()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	serverArgs := []string{"-p", strconv.Itoa(port), "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir}
	for _, kv := range opts.Settings {
		serverArgs = append(serverArgs, "-c", kv)
	}
	if err := s.pgTool(ctx, "pg_ctl", "-D", s.data, "-l", filepath.Join(dir, "server.log"), "-w", "-t", "60",
		"-o", strings.Join(serverArgs, " "), "start"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("soak: private server: %w", err)
	}
	_ = conn.Close(ctx)
	return s, nil
}

// Stop shuts the cluster down (fast mode) and deletes its directory.
func (s *Server) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := s.pgTool(ctx, "pg_ctl", "-D", s.data, "-m", "fast", "-w", "stop")
	return errors.Join(err, os.RemoveAll(s.Dir))
}

// pgTool runs one of the cluster's programs as the cluster's owner.
func (s *Server) pgTool(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.Dir = s.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	out, err := cmd.CombinedOutput()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return fmt.Errorf("soak: %s: %w: %s", name, err, lines[len(lines)-1])
	}
	return nil
}

// findBinDir returns the directory of initdb and pg_ctl.
func findBinDir() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "pg_ctl"} {
			if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
				return false
			}
		}
		return true
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); has(dir) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	major := func(d string) int { v, _ := strconv.Atoi(filepath.Base(filepath.Dir(d))); return v }
	slices.SortFunc(dirs, func(a, b string) int { return major(b) - major(a) })
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	return "", errors.New("soak: no initdb and pg_ctl found (pg_config --bindir, /usr/lib/postgresql/*/bin); install PostgreSQL's server package")
}

// serverCredential is nil for a normal user and the postgres account's ids
// for root.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("soak: running as root, and there is no postgres account to run initdb as")
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("soak: the postgres account has ids %s:%s", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// freeLoopbackPort asks the kernel for a free port on 127.0.0.1.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
