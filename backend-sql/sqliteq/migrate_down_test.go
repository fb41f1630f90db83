package sqliteq_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/core"
)

// sqliteVersions lists the versions this build embeds.
var sqliteVersions = []int{1, 2, 3, 4, 5, 6, 7}

// TestMigrationStatusAndDown reads a new file (every version pending),
// migrates and fills it, and reads it again (applied, with times, none
// reversible but versions 3, flow control, 4, queue declarations, 5,
// fan-in, 6, activity indexes, and 7, keyed flow counts); a down past
// version 2 is refused, names each version and why, and changes nothing;
// a down to 2 undoes 7, 6, 5, 4 and 3, and Migrate applies them again.
func TestMigrationStatusAndDown(t *testing.T) {
	ctx := context.Background()
	b, err := sqliteq.Open(ctx, filepath.Join(t.TempDir(), "m.db"), sqliteq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	st, err := b.MigrationStatus(ctx)
	if err != nil || len(st) != len(sqliteVersions) || slices.ContainsFunc(st, func(s sqliteq.MigrationStatus) bool { return s.Applied }) {
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
		reversible := s.Version >= 3 // flow control, declarations, fan-in, indexes and keyed counts: their downs drop or rebuild what they added
		if s.Version != sqliteVersions[i] || !s.Applied || !s.Known || s.Reversible != reversible || (s.Irreversible == "") != reversible || s.AppliedAt.Before(start) {
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
	if err != nil || len(again) != len(sqliteVersions) || slices.ContainsFunc(again, func(s sqliteq.MigrationStatus) bool { return !s.Applied }) {
		t.Fatalf("after refused downs: %+v, %v", again, err)
	}
	if undone, err := b.MigrateDown(ctx, 7); err != nil || len(undone) != 0 {
		t.Fatalf("down to the current version: %v, %v", undone, err)
	}
	if undone, err := b.MigrateDown(ctx, 2); err != nil || !slices.Equal(undone, []int{7, 6, 5, 4, 3}) {
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

// TestMigrateFlowWithData undoes migration 3 (flow control) on a file
// with jobs, adds jobs as the previous release writes them, applies 3
// again and checks the old jobs: claimable, their keys held, no flow
// fields, and a sequence working beside them.
func TestMigrateFlowWithData(t *testing.T) {
	ctx := context.Background()
	b, err := sqliteq.Open(ctx, filepath.Join(t.TempDir(), "f.db"), sqliteq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if err := b.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	sqltest.EnqueueAll(t, b, sqltest.Jobs("q", 10))
	if undone, err := b.MigrateDown(ctx, 2); err != nil || !slices.Equal(undone, []int{7, 6, 5, 4, 3}) {
		t.Fatalf("down to 2: %v, %v", undone, err)
	}
	for i := range 10 {
		now := time.Now().UnixMicro()
		if _, err := b.DB().ExecContext(ctx, `INSERT INTO jobs (id, queue, task, priority, state, max_attempts, idempotency_key, fingerprint, run_at, created_at)
			VALUES (?, 'q', 't', 0, 'queued', 3, ?, 'fp', ?, ?)`, core.NewID(time.Now()), "old"+string(rune('a'+i)), now, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	held, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "q", Task: "t", IdempotencyKey: "olda", Fingerprint: "fp"}})
	if err != nil || !held[0].Reused {
		t.Fatalf("enqueue with a key of the old release: %+v %v", held, err)
	}
	seq, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "q", Task: "s", SequenceKey: "x"}, {Queue: "q", Task: "s", SequenceKey: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	claimed := 0
	for {
		jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 50, LeaseTTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) == 0 {
			break
		}
		for _, j := range jobs {
			if j.Unique != "" || j.LimitKey != "" || (j.Task == "t" && j.SequenceKey != "") {
				t.Fatalf("job %s has flow fields after the migration: %+v", j.ID, j)
			}
			if j.ID == seq[1].Job.ID && claimed < 21 {
				t.Fatalf("the second job of the sequence started with the first running")
			}
			claimed++
			if errs, err := b.Complete(ctx, []core.Completion{{Lease: j.Lease}}); err != nil || errs[0] != nil {
				t.Fatalf("Complete: %v %v", err, errs)
			}
		}
	}
	if claimed != 22 {
		t.Fatalf("claimed %d jobs, want 20 old and 2 of the sequence", claimed)
	}
}

// TestMigrateFlowKeyedWithData undoes migration 7 (keyed flow counts) on
// a file with running keyed jobs, checks the previous release's counter
// rows, applies 7 again and drains the jobs within their key limits
// (sqltest.FlowKeyedMigration).
func TestMigrateFlowKeyedWithData(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, sqliteq.Options{})
	sqltest.FlowKeyedMigration(t, b, func() error {
		undone, err := b.MigrateDown(ctx, 6)
		if err == nil && !slices.Equal(undone, []int{7}) {
			err = errors.New("down to 6 did not undo 7 alone")
		}
		return err
	}, func() error { return b.Migrate(ctx) }, func() map[string]int64 {
		r, err := b.DB().QueryContext(ctx, sqltest.FlowCountsSQL("flow_counts"))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = r.Close() }()
		return sqltest.FlowCountRows(t, r)
	})
}
