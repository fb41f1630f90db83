package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/boson-go/boson/cmd/internal/store"
	"github.com/boson-go/boson/core"
)

func TestOpenRejectsBadURLs(t *testing.T) {
	for _, u := range []string{
		"nothing",
		"ftp://host/x",
		"mem:extra",
		"sqlite:x.db?bogus=1",
		"sqlite:x.db?synchronous=SOMETIMES",
		"redis://127.0.0.1:1/0?prefix=bad{tag}",
		"nats://127.0.0.1:1?namespace=a.b",
		"nats://127.0.0.1:1?namespace=ok&other=1",
	} {
		st, err := store.Open(context.Background(), u, store.Options{})
		if err == nil {
			_ = st.Close()
			t.Errorf("Open(%q) succeeded", u)
			continue
		}
		if !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("Open(%q) = %v, want an error wrapping ErrInvalidArgument", u, err)
		}
	}
}

func TestOpenMemAndSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "jobs.db")
	for _, u := range []string{"mem:", "sqlite:" + path, "sqlite::memory:", "sqlite:" + path + "?synchronous=NORMAL"} {
		st, err := store.Open(ctx, u, store.Options{})
		if err != nil {
			t.Fatalf("Open(%q): %v", u, err)
		}
		if err := st.Migrate(ctx); err != nil {
			t.Fatalf("Migrate(%q): %v", u, err)
		}
		if err := st.Migrate(ctx); err != nil {
			t.Fatalf("second Migrate(%q): %v", u, err)
		}
		res, err := st.Backend.Enqueue(ctx, []core.EnqueueRequest{{Task: "t"}})
		if err != nil {
			t.Fatalf("%s: enqueue: %v", u, err)
		}
		if _, err := st.Backend.GetJob(ctx, res[0].Job.ID); err != nil {
			t.Fatalf("%s: get: %v", u, err)
		}
		if err := st.Close(); err != nil {
			t.Fatalf("%s: close: %v", u, err)
		}
	}
}

func TestRedact(t *testing.T) {
	got := store.Redact("postgres://u:secret@h/db")
	if got != "postgres://u:xxxxx@h/db" {
		t.Fatalf("Redact = %q", got)
	}
}
