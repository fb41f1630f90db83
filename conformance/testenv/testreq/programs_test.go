package testreq

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// fakeBinDir makes dir/<version>/bin with the given programs in it.
func fakeBinDir(t *testing.T, root, version string, programs ...string) string {
	t.Helper()
	d := filepath.Join(root, version, "bin")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range programs {
		if err := os.WriteFile(filepath.Join(d, p), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func TestPostgresBinDirAnyVersion(t *testing.T) {
	notOnPath := func(string) (string, error) { return "", errors.New("not on PATH") }
	noConfig := func() string { return "" }
	all := []string{"initdb", "pg_ctl", "postgres"}

	root := t.TempDir()
	fakeBinDir(t, root, "9.6", all...)
	v13 := fakeBinDir(t, root, "13", all...)
	fakeBinDir(t, root, "18", "initdb", "postgres") // no pg_ctl: incomplete
	if d, err := postgresBinDir(notOnPath, noConfig, root); err != nil || d != v13 {
		t.Fatalf("scan of %s = %q, %v; want the newest complete version %s", root, d, err, v13)
	}
	v17 := fakeBinDir(t, root, "17", all...)
	if d, err := postgresBinDir(notOnPath, noConfig, root); err != nil || d != v17 {
		t.Fatalf("scan of %s = %q, %v; want %s", root, d, err, v17)
	}

	// pg_config --bindir comes before the scan, and initdb on PATH (through
	// a symbolic link, as Debian's wrappers are) before both.
	other := fakeBinDir(t, t.TempDir(), "16", all...)
	if d, _ := postgresBinDir(notOnPath, func() string { return other }, root); d != other {
		t.Fatalf("with pg_config --bindir %s: %q", other, d)
	}
	link := filepath.Join(t.TempDir(), "initdb")
	if err := os.Symlink(filepath.Join(v13, "initdb"), link); err != nil {
		t.Fatal(err)
	}
	onPath := func(string) (string, error) { return link, nil }
	if d, _ := postgresBinDir(onPath, func() string { return other }, root); d != v13 {
		t.Fatalf("with initdb on PATH linked to %s: %q", v13, d)
	}

	if _, err := postgresBinDir(notOnPath, noConfig, t.TempDir()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("without any server programs: %v, want ErrUnavailable", err)
	}
}

// TestPostgresBinDirHere finds the programs of the machine's own server,
// which the fault suite's and backend-sql's private servers need. Without
// them the test skips, or fails when BOSON_TEST_REQUIRE requires
// postgres-server.
func TestPostgresBinDirHere(t *testing.T) {
	d, err := PostgresBinDir()
	if err != nil {
		Unavailable(t, PostgresServer, err.Error())
	}
	for _, p := range []string{"initdb", "pg_ctl", "postgres"} {
		if _, err := os.Stat(filepath.Join(d, p)); err != nil {
			t.Errorf("PostgresBinDir() = %s, which lacks %s: %v", d, p, err)
		}
	}
	t.Logf("PostgreSQL server programs in %s", d)
}
