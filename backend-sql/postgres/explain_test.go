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
