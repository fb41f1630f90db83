package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestQuickstart runs the example as the README's command does and checks
// what it prints.
func TestQuickstart(t *testing.T) {
	var out bytes.Buffer
	db := filepath.Join(t.TempDir(), "queue.db")
	if err := run(&out, []string{"-db", db}); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"spawned 6 count-words tasks",
		`[1/6] "hello world"`,
		"→ 2 words, 11 chars (attempt 1)",
		`[3/6] "flaky network"`,
		"(attempt 2)",
		`[6/6] "retries, steps, sleeps and waits"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	summary := regexp.MustCompile(`done: 6 succeeded, 1 failed attempts retried, 7 executions in `)
	if !summary.MatchString(got) {
		t.Errorf("summary line missing or wrong:\n%s", got)
	}
}
