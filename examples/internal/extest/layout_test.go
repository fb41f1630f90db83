package extest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryExampleIsTested checks that each example folder has a header
// comment that says how to run it, and a test that runs it.
func TestEveryExampleIsTested(t *testing.T) {
	root := filepath.Join("..", "..")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "internal" || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		n++
		dir := filepath.Join(root, e.Name())
		src, err := os.ReadFile(filepath.Join(dir, "main.go"))
		if err != nil {
			t.Errorf("%s: %v", e.Name(), err)
			continue
		}
		if !strings.HasPrefix(string(src), "// Command "+e.Name()+" ") {
			t.Errorf("%s/main.go does not start with a header comment %q", e.Name(), "// Command "+e.Name())
		}
		if !strings.Contains(string(src), "go run ./examples/"+e.Name()) {
			t.Errorf("%s/main.go does not say how to run it (go run ./examples/%s)", e.Name(), e.Name())
		}
		if _, err := os.Stat(filepath.Join(dir, "main_test.go")); err != nil {
			t.Errorf("%s has no test that runs it: %v", e.Name(), err)
		}
	}
	if n < 15 {
		t.Errorf("found %d examples, want at least 15", n)
	}
}
