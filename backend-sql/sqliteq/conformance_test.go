package sqliteq_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/conformance"
	"github.com/boson-go/boson/conformance/testenv"
	"github.com/boson-go/boson/core"
)

// newBackend returns a migrated backend on a fresh file in a temp dir.
// The file starts as a copy of one migrated once per test process (see
// migratedFile): migrating parses and runs every schema statement, which
// under the race detector costs the transpiled SQLite engine more than
// most cases do. Migrate then runs on the copy as it does on any store
// that is up to date. The migration tests migrate files of their own.
func newBackend(t testing.TB, opts sqliteq.Options) *sqliteq.Backend {
	t.Helper()
	path := filepath.Join(t.TempDir(), "boson.db")
	if err := copyFile(path, migratedFile(t)); err != nil {
		t.Fatal(err)
	}
	b, err := sqliteq.Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if err := b.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b
}

func harness() conformance.Harness { return harnessSync("sqlite", "") }

// harnessSync is the harness with the given synchronous setting.
func harnessSync(name string, sync sqliteq.Synchronous) conformance.Harness {
	return conformance.Harness{
		Name: name,
		New: func(t testing.TB, o conformance.Options) core.QueueBackend {
			return newBackend(t, sqliteq.Options{Clock: o.Clock, Limits: o.Limits, Synchronous: sync})
		},
		Capabilities:  conformance.Capabilities{Notify: true, TxEnqueue: true, TxControl: true, Runs: true, Search: true, Tasks: true, Delete: true, AtomicBulk: true, Flow: true, Declare: true, Await: true},
		FlowExactJobs: exactJobs,
		BeginTx: func(ctx context.Context, t testing.TB, b core.QueueBackend) (any, func() error, func() error) {
			tx, err := b.(*sqliteq.Backend).BeginTx(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return tx, tx.Commit, tx.Rollback
		},
	}
}

func TestConformance(t *testing.T) {
	conformance.Run(t, harness())
}

// TestFlowExactFullSize runs, under the race detector, the suite's
// FlowExact races at their full size (8 claimers over 2,000 jobs) in a
// child built without it, since TestConformance runs them smaller there.
// Without the race detector TestConformance runs the full size itself.
func TestFlowExactFullSize(t *testing.T) {
	t.Parallel()
	if !testenv.WithoutRaceRun(t, "TestConformance/FlowExact") {
		t.Log("built without the race detector: TestConformance runs FlowExact at full size itself")
	}
}

func BenchmarkConformance(b *testing.B) {
	conformance.Bench(b, harness())
}

// BenchmarkConformanceSyncNormal measures the cheaper durability setting.
func BenchmarkConformanceSyncNormal(b *testing.B) {
	conformance.Bench(b, harnessSync("sqlite-normal", sqliteq.SyncNormal))
}
