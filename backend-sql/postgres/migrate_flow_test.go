package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/core"
)

// TestMigrateFlowWithData fills a schema of migration 5 (the release
// before flow control) with queued, running and keyed jobs, applies
// migration 6, and checks that the old jobs keep working: they are
// claimable in order, a running one completes under its lease, their
// keys still hold, their flow fields read as empty, and flow control
// works beside them. Then it undoes 6 and applies it again.
func TestMigrateFlowWithData(t *testing.T) {
	ctx := context.Background()
	pool := sqltest.Pool(t, sqltest.PostgresURL(t), 4)
	schema := sqltest.Schema(t, pool)
	b := openSchema(t, pool, schema)
	if err := postgres.MigrateTo(ctx, b, 5); err != nil {
		t.Fatal(err)
	}
	// Rows as the previous release writes them, through its boson_enqueue.
	for i := range 30 {
		key := any(nil)
		if i%3 == 0 {
			key = fmt.Sprintf("k%d", i)
		}
		if _, err := pool.Exec(ctx, fmt.Sprintf(`SELECT * FROM %q.boson_enqueue(NULL, ARRAY[$1], ARRAY['q'], ARRAY['t'], ARRAY[NULL::bytea],
			ARRAY[''], ARRAY[0], ARRAY[3], ARRAY[''], ARRAY[0::bigint], ARRAY[0::bigint], ARRAY[$2::text], ARRAY['fp'], ARRAY[''], ARRAY[0::bigint], 'c')`, schema),
			core.NewID(time.Now()), key); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, fmt.Sprintf(`UPDATE %q.jobs SET state = 'running', attempt = 1, token = 1, worker_id = 'old',
		lease_expires_at = 9000000000000000, run_id = id || '.1', started_at = 1
		WHERE id = (SELECT min(id) FROM %q.jobs)`, schema, schema)); err != nil {
		t.Fatal(err)
	}
	if err := b.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	page, err := b.ListJobs(ctx, core.JobFilter{Queue: "q", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Jobs) != 30 {
		t.Fatalf("%d jobs after the migration, want 30", len(page.Jobs))
	}
	var running core.Job
	for _, j := range page.Jobs {
		if j.Unique != "" || j.UniquePeriod != 0 || j.LimitKey != "" || j.SequenceKey != "" {
			t.Fatalf("job %s has flow fields %q %v %q %q after the migration", j.ID, j.Unique, j.UniquePeriod, j.LimitKey, j.SequenceKey)
		}
		if j.State == core.StateRunning {
			running = j
		}
	}
	if running.ID == "" {
		t.Fatal("no running job after the migration")
	}
	errs, err := b.Complete(ctx, []core.Completion{{Lease: running.Lease}})
	if err != nil || errs[0] != nil {
		t.Fatalf("completing the job the old release claimed: %v %v", err, errs)
	}
	// Old keys still hold.
	held, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "q", Task: "t", IdempotencyKey: "k3", Fingerprint: "fp"}})
	if err != nil || !held[0].Reused {
		t.Fatalf("enqueue with a key of the old release: %+v %v", held, err)
	}
	if _, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "q", Task: "t", IdempotencyKey: "k3", Fingerprint: "other"}}); !errors.Is(err, core.ErrIdempotencyConflict) {
		t.Fatalf("conflicting enqueue with an old key: %v, want ErrIdempotencyConflict", err)
	}
	// Flow control beside the old jobs: a sequence and a key limit.
	if err := b.PutTaskConfig(ctx, core.TaskConfig{Task: "s", MaxRunningPerKey: 1}); err != nil {
		t.Fatal(err)
	}
	seq, err := b.Enqueue(ctx, []core.EnqueueRequest{
		{Queue: "q", Task: "s", SequenceKey: "order-1", Priority: -1},
		{Queue: "q", Task: "s", SequenceKey: "order-1", Priority: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	seen := map[string]bool{}
	for {
		jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 7, LeaseTTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) == 0 {
			break
		}
		for _, j := range jobs {
			if j.ID == seq[1].Job.ID && !seen[seq[0].Job.ID] {
				t.Fatalf("the second job of the sequence started before the first")
			}
			seen[j.ID] = true
			got++
			if errs, err := b.Complete(ctx, []core.Completion{{Lease: j.Lease}}); err != nil || errs[0] != nil {
				t.Fatalf("Complete: %v %v", err, errs)
			}
		}
	}
	if got != 31 {
		t.Fatalf("claimed %d jobs, want the 29 old queued ones and the 2 of the sequence", got)
	}

	// Down to 5 and up again, with the jobs in place.
	if _, err := b.MigrateDown(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if err := b.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	counts, err := b.CountJobs(ctx, core.JobFilter{Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if counts[core.StateSucceeded] != 32 {
		t.Fatalf("counts after down and up: %v, want 32 succeeded", counts)
	}
}

// TestMigrateFlowKeyedWithData undoes migration 10 (keyed flow counts) on
// a schema with running keyed jobs, checks the previous release's counter
// rows, applies 10 again and drains the jobs within their key limits
// (sqltest.FlowKeyedMigration).
func TestMigrateFlowKeyedWithData(t *testing.T) {
	ctx := context.Background()
	pool := sqltest.Pool(t, sqltest.PostgresURL(t), 4)
	schema := sqltest.Schema(t, pool)
	b := openSchema(t, pool, schema)
	if err := b.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	sqltest.FlowKeyedMigration(t, b, func() error {
		undone, err := b.MigrateDown(ctx, 9)
		if err == nil && !slices.Equal(undone, []int{10}) {
			err = fmt.Errorf("down to 9 undid %v", undone)
		}
		return err
	}, func() error { return b.Migrate(ctx) }, func() map[string]int64 {
		r, err := pool.Query(ctx, sqltest.FlowCountsSQL(fmt.Sprintf("%q.flow_counts", schema)))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		return sqltest.FlowCountRows(t, r)
	})
}
