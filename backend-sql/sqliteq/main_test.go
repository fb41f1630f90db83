package sqliteq_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/core"
)

// TestMain turns the test binary into a worker process when the
// multi-process test starts it that way (target: the database path).
func TestMain(m *testing.M) {
	if os.Getenv(sqltest.EnvWorker) != "" {
		os.Exit(sqltest.WorkerMain(func(ctx context.Context, path string) (core.QueueBackend, error) {
			// The race detector slows the transpiled SQLite engine many times
			// over; give lock waits the room a lease TTL of minutes allows.
			return sqliteq.Open(ctx, path, sqliteq.Options{MaxBusyWait: 30 * time.Second})
		}, "mp"))
	}
	code := m.Run()
	removeTemplate()
	os.Exit(code)
}

// template is the database file that newBackend copies: migrated to the
// latest version, then closed, so that its write-ahead log is folded into
// the file and the file alone holds the store.
var template struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// migratedFile returns the template's path, making it on first use.
func migratedFile(t testing.TB) string {
	t.Helper()
	template.once.Do(func() {
		ctx := context.Background()
		if template.dir, template.err = os.MkdirTemp("", "sqliteq-template-"); template.err != nil {
			return
		}
		template.path = filepath.Join(template.dir, "boson.db")
		b, err := sqliteq.Open(ctx, template.path, sqliteq.Options{})
		if err != nil {
			template.err = err
			return
		}
		template.err = errors.Join(b.Migrate(ctx), b.Close())
		if template.err == nil {
			// A log left beside the file would hold part of the schema.
			if _, err := os.Stat(template.path + "-wal"); err == nil {
				template.err = fmt.Errorf("the template's write-ahead log outlived its close")
			}
		}
	})
	if template.err != nil {
		t.Fatalf("migrated template: %v", template.err)
	}
	return template.path
}

// removeTemplate deletes the template's directory; TestMain calls it once
// the tests have run. The template lives in this file, beside TestMain, so
// that every build of the tests that copies it (a mutant's too) removes it.
func removeTemplate() {
	if template.dir != "" {
		_ = os.RemoveAll(template.dir)
	}
}

// copyFile copies the file src to a new file dst.
func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
