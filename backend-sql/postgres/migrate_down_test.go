package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boson-go/boson/backend-sql/internal/engine"
	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/core"
)

// openSchema returns a backend on schema, closed at cleanup.
func openSchema(t *testing.T, pool *pgxpool.Pool, schema string) *postgres.Backend {
	t.Helper()
	b, err := postgres.New(pool, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// reversible lists the versions that have a safe down step.
var reversible = map[int]bool{5: true, 6: true, 7: true, 8: true, 9: true, 10: true}

// embedded returns the versions this build embeds, in order.
func embedded(t *testing.T) []int {
	t.Helper()
	all, err := engine.Migrations("postgres")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int, len(all))
	for i, m := range all {
		out[i] = m.Version
	}
	return out
}

// enqueueBody returns the source of the schema's boson_enqueue, with the
// schema's name replaced by "{s}".
func enqueueBody(t *testing.T, pool *pgxpool.Pool, schema string) string {
	t.Helper()
	var src string
	if err := pool.QueryRow(context.Background(), `SELECT p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = $1 AND p.proname = 'boson_enqueue'`, schema).Scan(&src); err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(src, schema, "{s}")
}

// TestMigrationStatus reads a schema that does not exist yet (every
// version pending, nothing created), then the migrated one: every version
// applied with its time, and only the versions in reversible (5 to 10) reversible.
func TestMigrationStatus(t *testing.T) {
	ctx := context.Background()
	pool := sqltest.Pool(t, sqltest.PostgresURL(t), 4)
	schema := sqltest.Schema(t, pool)
	b := openSchema(t, pool, schema)
	st, err := b.MigrationStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	versions := embedded(t)
	if len(st) != len(versions) {
		t.Fatalf("%d versions, want %d: %+v", len(st), len(versions), st)
	}
	for _, s := range st {
		if s.Applied || !s.AppliedAt.IsZero() || !s.Known {
			t.Fatalf("before Migrate: %+v", s)
		}
	}
	var schemas int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, schema).Scan(&schemas); err != nil || schemas != 0 {
		t.Fatalf("status created the schema (%d, %v)", schemas, err)
	}
	start := time.Now().Add(-time.Second)
	if err := postgres.MigrateTo(ctx, b, 3); err != nil {
		t.Fatal(err)
	}
	if err := b.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	st, err = b.MigrationStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range st {
		if s.Version != versions[i] || !s.Applied || s.AppliedAt.Before(start) || s.AppliedAt.After(time.Now()) {
			t.Fatalf("after Migrate: %+v", s)
		}
		if s.Reversible != reversible[s.Version] || s.Reversible == (s.Irreversible != "") {
			t.Fatalf("version %d: reversible %v, reason %q", s.Version, s.Reversible, s.Irreversible)
		}
	}
	if st[0].Name != "init" || st[4].Name != "enqueue_notifies_positions" {
		t.Fatalf("names %q, %q", st[0].Name, st[4].Name)
	}
	// A version a newer build applied is listed, applied and not known.
	if _, err := pool.Exec(ctx, `INSERT INTO "`+schema+`".boson_migrations VALUES (99, 'future', 1)`); err != nil {
		t.Fatal(err)
	}
	st, err = b.MigrationStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if f := st[len(st)-1]; f.Version != 99 || f.Known || !f.Applied || f.Reversible || f.Name != "future" {
		t.Fatalf("newer version: %+v", f)
	}
	if _, err := b.MigrateDown(ctx, 4); !errors.Is(err, postgres.ErrIrreversible) || !strings.Contains(err.Error(), "0099_future") {
		t.Fatalf("down past a newer build's version: %v", err)
	}
}

// TestMigrateDownOnline fills a schema migrated to version 5, and undoes 5
// while a producer enqueues and a worker claims and completes: no call
// fails, no job is lost, the function is migration 4's again, and
// Migrate applies 5 again. Down to 2 is refused and changes nothing.
func TestMigrateDownOnline(t *testing.T) {
	ctx := context.Background()
	url := sqltest.PostgresURL(t)
	pool := sqltest.Pool(t, url, 8)
	schema := sqltest.Schema(t, pool)
	open := func(schema string) *postgres.Backend { return openSchema(t, pool, schema) }
	ref := sqltest.Schema(t, pool)
	if err := postgres.MigrateTo(ctx, open(ref), 4); err != nil {
		t.Fatal(err)
	}
	v4 := enqueueBody(t, pool, ref)

	// Version 5 under the previous release, whose producer and worker
	// (prev_release_test.go) run during the down: this release needs 6.
	b := open(schema)
	if err := postgres.MigrateTo(ctx, b, 5); err != nil {
		t.Fatal(err)
	}
	v5 := enqueueBody(t, pool, schema)
	if v4 == v5 {
		t.Fatal("migrations 4 and 5 define the same function")
	}
	for range 5 {
		if err := prevEnqueue(ctx, pool, schema, 1000); err != nil {
			t.Fatal(err)
		}
	}

	_, err := b.MigrateDown(ctx, 2)
	if !errors.Is(err, postgres.ErrIrreversible) || !errors.Is(err, core.ErrInvalidState) {
		t.Fatalf("down to 2: %v", err)
	}
	for _, want := range []string{"0004_enqueue_returns_less", "0003_runs_at_finish"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("refusal does not name %s: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "0005") || enqueueBody(t, pool, schema) != v5 {
		t.Fatalf("refused down changed or named a reversible version: %v", err)
	}
	if _, err := b.MigrateDown(ctx, -1); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("down to -1: %v", err)
	}

	var produced, completed atomic.Int64
	stop := make(chan struct{})
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := prevEnqueue(ctx, pool, schema, 50); err != nil {
				errs <- err
				return
			}
			produced.Add(50)
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, err := prevClaimComplete(ctx, pool, schema, 50)
			if err != nil {
				errs <- err
				return
			}
			completed.Add(int64(n))
		}
	}()
	for produced.Load() < 500 || completed.Load() < 500 {
		time.Sleep(time.Millisecond)
	}
	undone, err := b.MigrateDown(ctx, 4)
	if err != nil || len(undone) != 1 || undone[0] != 5 {
		t.Fatalf("down to 4: %v, %v", undone, err)
	}
	if got := enqueueBody(t, pool, schema); got != v4 {
		t.Fatal("after down to 4 boson_enqueue is not migration 4's")
	}
	before := produced.Load()
	for produced.Load() < before+500 {
		time.Sleep(time.Millisecond)
	}
	st, err := b.MigrationStatus(ctx)
	if err != nil || len(st) != len(embedded(t)) || st[4].Applied || st[len(st)-1].Applied || !st[3].Applied {
		t.Fatalf("status after down: %+v, %v", st, err)
	}
	if undone, err := b.MigrateDown(ctx, 4); err != nil || len(undone) != 0 {
		t.Fatalf("second down to 4: %v, %v", undone, err)
	}
	if err := postgres.MigrateTo(ctx, b, 5); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if enqueueBody(t, pool, schema) != v5 {
		t.Fatal("Migrate after down did not restore migration 5")
	}
	var total, done int64
	if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE state = 'succeeded') FROM "`+schema+`".jobs`).Scan(&total, &done); err != nil {
		t.Fatal(err)
	}
	if total != 5000+produced.Load() || done != completed.Load() {
		t.Fatalf("%d jobs (%d succeeded), want %d (%d)", total, done, 5000+produced.Load(), completed.Load())
	}
}

// TestMigrateDownTakesTheLock holds Migrate's advisory lock: MigrateDown
// waits for it, then runs.
func TestMigrateDownTakesTheLock(t *testing.T) {
	ctx := context.Background()
	pool := sqltest.Pool(t, sqltest.PostgresURL(t), 4)
	schema := sqltest.Schema(t, pool)
	b := openSchema(t, pool, schema)
	if err := b.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", "boson.migrate."+schema); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.MigrateDown(ctx, 4)
		done <- err
	}()
	for waiting := 0; waiting == 0; {
		select {
		case err := <-done:
			t.Fatalf("down ran while the lock was held: %v", err)
		default:
		}
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND objid = (hashtext($1)::bigint & 4294967295)::oid`, "boson.migrate."+schema).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
