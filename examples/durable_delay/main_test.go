package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
)

func TestDurableDelay(t *testing.T) {
	out := extest.Run(t, run, "-db", filepath.Join(t.TempDir(), "queue.db"))
	extest.Contains(t, out,
		"worker-a: welcome mail sent to ada@example.com",
		"worker-a: ada@example.com sleeps, the slot is free",
		"reminder is sleeping until its wake time",
		"worker-a stopped (suspended 1 task, holding nothing)",
		"worker-b: resized image 1", "worker-b: resized image 2", "worker-b: resized image 3",
		"worker-b: woke up, reminder sent to ada@example.com (after welcome-ada@example.com)",
		`done: "reminded ada@example.com", 1 welcome mail, still attempt 1, slept at least 1s: true`,
	)
	if n := strings.Count(out, "welcome mail sent"); n != 1 {
		t.Errorf("welcome mail sent %d times, want 1", n)
	}
}
