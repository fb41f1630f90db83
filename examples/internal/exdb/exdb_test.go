package exdb

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSQLiteFileKeepsAGivenPath(t *testing.T) {
	given := filepath.Join(t.TempDir(), "mine.db")
	if err := os.WriteFile(given, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	file, remove, err := SQLiteFile(given, "exdb-test-")
	if err != nil {
		t.Fatal(err)
	}
	if file != given {
		t.Fatalf("file = %q, want %q", file, given)
	}
	remove()
	if _, err := os.Stat(given); err != nil {
		t.Fatalf("remove touched the given file: %v", err)
	}
}

func TestSQLiteFileDefaultsToATemporaryFolder(t *testing.T) {
	file, remove, err := SQLiteFile("", "exdb-test-")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(file)
	if filepath.Base(file) != "queue.db" || !strings.HasPrefix(filepath.Base(dir), "exdb-test-") {
		t.Fatalf("file = %q, want queue.db in a folder named exdb-test-*", file)
	}
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	remove()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("folder %s still there after remove: %v", dir, err)
	}
}
