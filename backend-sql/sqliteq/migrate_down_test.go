package sqliteq_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/core"
)

// TestMigrationStatusAndDown reads a new file (every version pending),
// migrates and fills it, and reads it again (applied, with times, none
// reversible but the last, 0004_queue_declared); a down past version 2
// is refused, names each version and why, and changes nothing; a down to
// 2 undoes version 4.
func TestMigrationStatusAndDown(t *testing.T) {
	ctx := context.Background()
	b, err := sqliteq.Open(ctx, filepath.Join(t.TempDir(), "m.db"), sqliteq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	st, err := b.MigrationStatus(ctx)
	if err != nil || len(st) != 3 || st[0].Applied || st[1].Applied || st[2].Applied {
		t.Fatalf("before Migrate: %+v, %v", st, err)
	}
	start := time.Now().Add(-time.Second)
	if err := b.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	sqltest.EnqueueAll(t, b, sqltest.Jobs("q", 100))
	st, err = b.MigrationStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range st {
		want := []int{1, 2, 4}[i]
		if s.Version != want || !s.Applied || !s.Known || s.Reversible != (want == 4) || s.Reversible == (s.Irreversible != "") || s.AppliedAt.Before(start) {
			t.Fatalf("after Migrate: %+v", s)
		}
	}
	for _, to := range []int{0, 1} {
		_, err := b.MigrateDown(ctx, to)
		if !errors.Is(err, sqliteq.ErrIrreversible) || !errors.Is(err, core.ErrInvalidState) || !strings.Contains(err.Error(), "0002_runs_at_finish: ") {
			t.Fatalf("down to %d: %v", to, err)
		}
		if strings.Contains(err.Error(), "0001") != (to == 0) {
			t.Fatalf("down to %d names the wrong versions: %v", to, err)
		}
	}
	again, err := b.MigrationStatus(ctx)
	if err != nil || len(again) != 3 || !again[0].Applied || !again[1].Applied || !again[2].Applied {
		t.Fatalf("after refused downs: %+v, %v", again, err)
	}
	if undone, err := b.MigrateDown(ctx, 2); err != nil || len(undone) != 1 || undone[0] != 4 {
		t.Fatalf("down to 2: %v, %v", undone, err)
	}
	if undone, err := b.MigrateDown(ctx, 2); err != nil || len(undone) != 0 {
		t.Fatalf("down to the current version: %v, %v", undone, err)
	}
	if err := b.Migrate(ctx); err != nil {
		t.Fatalf("Migrate after down to 2: %v", err)
	}
	counts, err := b.CountJobs(ctx, core.JobFilter{Queue: "q"})
	if err != nil || counts[core.StateQueued] != 100 {
		t.Fatalf("jobs after refused downs: %v, %v", counts, err)
	}
}
