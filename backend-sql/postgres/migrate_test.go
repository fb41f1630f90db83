package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/postgres"
)

// TestMigrateConcurrently has four backends, as four processes starting at
// once, migrate one fresh schema together, then again: every call
// succeeds and each migration is recorded once.
func TestMigrateConcurrently(t *testing.T) {
	ctx := context.Background()
	url := sqltest.PostgresURL(t)
	admin := sqltest.Pool(t, url, 2)
	schema := sqltest.Schema(t, admin)
	backends := make([]*postgres.Backend, 4)
	for i := range backends {
		b, err := postgres.New(sqltest.Pool(t, url, 2), postgres.Options{Schema: schema})
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
	if err := admin.QueryRow(ctx, `SELECT count(*), count(DISTINCT version) FROM "`+schema+`".boson_migrations`).Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n != distinct || n == 0 {
		t.Fatalf("%d migration rows for %d versions", n, distinct)
	}
}
