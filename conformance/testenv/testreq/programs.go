package testreq

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// ErrUnavailable reports that a program or account a private server needs
// is not on this machine.
var ErrUnavailable = errors.New("unavailable")

// postgresLibDir is where Debian installs each major version of the
// PostgreSQL server, as postgresLibDir/<version>/bin.
const postgresLibDir = "/usr/lib/postgresql"

// PostgresBinDir returns a directory that holds the PostgreSQL server
// programs initdb, pg_ctl and postgres, of whatever major version is
// installed: the directory initdb on PATH resolves to, else what
// pg_config --bindir prints, else the newest /usr/lib/postgresql/*/bin
// (Debian's layout). It returns an error wrapping [ErrUnavailable] that
// says where it looked when none does.
func PostgresBinDir() (string, error) {
	pgConfig := func() string {
		out, err := exec.Command("pg_config", "--bindir").Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	return postgresBinDir(exec.LookPath, pgConfig, postgresLibDir)
}

// postgresBinDir is PostgresBinDir with its sources handed in.
func postgresBinDir(lookPath func(string) (string, error), pgConfig func() string, libDir string) (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "pg_ctl", "postgres"} {
			if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.IsDir() {
				return false
			}
		}
		return true
	}
	if p, err := lookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && has(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
		if has(filepath.Dir(p)) {
			return filepath.Dir(p), nil
		}
	}
	if d := pgConfig(); d != "" && has(d) {
		return d, nil
	}
	dirs, _ := filepath.Glob(filepath.Join(libDir, "*", "bin"))
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("%w: initdb, pg_ctl and postgres are neither on PATH, nor in pg_config --bindir, nor under %s/*/bin",
		ErrUnavailable, libDir)
}

// pgVersion is the major version a .../<version>/bin directory is of
// ("9.6" and "17" alike), or 0.
func pgVersion(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

// PostgresCredential returns the credential to run initdb, pg_ctl and
// postgres with: nil for a normal user, the postgres account's for root
// (the programs refuse to run as root). It returns an error wrapping
// [ErrUnavailable] when the process is root and there is no such account.
func PostgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("%w: running as root and there is no postgres account for initdb", ErrUnavailable)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("%w: postgres account has ids %s:%s", ErrUnavailable, u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}
