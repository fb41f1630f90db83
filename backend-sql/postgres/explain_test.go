package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/backend-sql/postgres"
)

// TestClaimUsesIndexOnMillionJobs fills a schema with 1,000,000 claimable
// jobs and checks that the claim's plan walks the jobs_claim index (an
// index scan in claim order with a LIMIT, not a sort of the backlog).
func TestClaimUsesIndexOnMillionJobs(t *testing.T) {
	rows := 1_000_000
	if testing.Short() {
		rows = 100_000
	}
	ctx := context.Background()
	b := newBackend(t, postgres.Options{})
	s := `"` + b.Schema() + `".`
	start := time.Now()
	if _, err := b.Pool().Exec(ctx, `INSERT INTO `+s+`jobs (id, queue, task, priority, state, max_attempts, run_at, created_at)
		SELECT lpad(g::text, 26, '0'), CASE WHEN g % 10 = 0 THEN 'other' ELSE 'big' END, 't', (g % 7) - 3,
			CASE WHEN g % 3 = 0 THEN 'succeeded' ELSE 'queued' END, 5, 1000000 + g, 1000000 + g
		FROM generate_series(1, $1::int) g`, rows); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Pool().Exec(ctx, "ANALYZE "+s+"jobs"); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d jobs stored in %v", rows, time.Since(start).Round(time.Millisecond))
	plan, err := b.ExplainClaim(ctx, "big", 100, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("claim plan on %d jobs:\n%s", rows, plan)
	if !strings.Contains(plan, "jobs_claim") {
		t.Fatalf("the claim does not use the jobs_claim index:\n%s", plan)
	}
	if strings.Contains(plan, "Seq Scan on jobs") {
		t.Fatalf("the claim scans the jobs table:\n%s", plan)
	}
}

// TestClaimPlanIgnoresStaleStatistics: a queue that the table's
// statistics have never seen is estimated at one matching row, at which
// reading the whole queue through another index and sorting it costs the
// planner no more than walking the claim index. The claim must still walk
// jobs_claim in order and stop after its limit, without a sort.
func TestClaimPlanIgnoresStaleStatistics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newBackend(t, postgres.Options{})
	s := `"` + b.Schema() + `".`
	insert := func(queue, state string, from, n int) {
		t.Helper()
		if _, err := b.Pool().Exec(ctx, `INSERT INTO `+s+`jobs (id, queue, task, priority, state, max_attempts, run_at, created_at)
			SELECT lpad(g::text, 26, '0'), $1, 't', 0, $2, 5, 1000000 + g, 1000000 + g
			FROM generate_series($3::int, $3::int + $4::int - 1) g`, queue, state, from, n); err != nil {
			t.Fatal(err)
		}
	}
	// What the statistics saw: finished jobs of other queues only.
	insert("done-a", "succeeded", 1, 30_000)
	insert("done-b", "succeeded", 30_001, 30_000)
	if _, err := b.Pool().Exec(ctx, "ANALYZE "+s+"jobs"); err != nil {
		t.Fatal(err)
	}
	// What is there now: a backlog in a queue they never saw, due later
	// than every run_at they recorded.
	insert("fresh", "queued", 100_001, 20_000)
	plan, err := b.ExplainClaim(ctx, "fresh", 100, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("claim plan under stale statistics:\n%s", plan)
	if !strings.Contains(plan, "jobs_claim") {
		t.Fatalf("the claim does not use jobs_claim:\n%s", plan)
	}
	for _, line := range strings.Split(plan, "\n") {
		if strings.Contains(line, "Sort Key:") && strings.Contains(line, "priority") {
			t.Fatalf("the claim sorts the queue instead of walking jobs_claim in order:\n%s", plan)
		}
	}
}
