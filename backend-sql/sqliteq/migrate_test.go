package sqliteq_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/boson-go/boson/backend-sql/sqliteq"
)

// TestMigrateConcurrently has four backends on one new file migrate it at
// once, then again: every call succeeds and each migration is recorded
// once.
func TestMigrateConcurrently(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	backends := make([]*sqliteq.Backend, 4)
	for i := range backends {
		b, err := sqliteq.Open(ctx, path, sqliteq.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		backends[i] = b
	}
	for round := range 2 {
		var wg sync.WaitGroup
		errs := make([]error, len(backends))
		for i, b := range backends {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = b.Migrate(ctx)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, backend %d: %v", round, i, err)
			}
		}
	}
	var n, distinct int
	if err := backends[0].DB().QueryRowContext(ctx, "SELECT count(*), count(DISTINCT version) FROM boson_migrations").Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n != distinct || n == 0 {
		t.Fatalf("%d migration rows for %d versions", n, distinct)
	}
}
