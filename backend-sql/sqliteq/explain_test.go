package sqliteq_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/backend-sql/sqliteq"
)

// TestClaimUsesIndexOnMillionJobs fills a file with 1,000,000 jobs and
// checks that the claim's query plan searches the jobs_claim index in
// claim order, with no temporary B-tree for the ORDER BY.
func TestClaimUsesIndexOnMillionJobs(t *testing.T) {
	// Under the race detector the transpiled SQLite engine runs many
	// times slower; a smaller table still shows the plan.
	rows := 1_000_000
	if raceEnabled {
		rows = 10_000
	} else if testing.Short() {
		rows = 100_000
	}
	ctx := context.Background()
	b := newBackend(t, sqliteq.Options{Synchronous: sqliteq.SyncNormal})
	start := time.Now()
	if _, err := b.DB().ExecContext(ctx, `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?)
		INSERT INTO jobs (id, queue, task, priority, state, max_attempts, run_at, created_at)
		SELECT printf('%026d', n), CASE WHEN n % 10 = 0 THEN 'other' ELSE 'big' END, 't', (n % 7) - 3,
			CASE WHEN n % 3 = 0 THEN 'succeeded' ELSE 'queued' END, 5, 1000000 + n, 1000000 + n FROM g`, rows); err != nil {
		t.Fatal(err)
	}
	if _, err := b.DB().ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d jobs stored in %v", rows, time.Since(start).Round(time.Millisecond))
	plan, err := b.ExplainClaim(ctx, "big", 100)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("claim plan on %d jobs:\n%s", rows, plan)
	if !strings.Contains(plan, "jobs_claim") {
		t.Fatalf("the claim does not use the jobs_claim index:\n%s", plan)
	}
	if strings.Contains(plan, "TEMP B-TREE") {
		t.Fatalf("the claim sorts the backlog:\n%s", plan)
	}
}
