package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/postgres"
)

// TestMultiProcessExactlyOnce has three worker processes drain 10,000
// jobs from one schema, then checks in the database that every job
// succeeded exactly once: one succeeded run per job, no other runs.
func TestMultiProcessExactlyOnce(t *testing.T) {
	const jobs = 10_000
	b := newBackend(t, postgres.Options{})
	start := time.Now()
	sqltest.EnqueueAll(t, b, sqltest.Jobs("mp", jobs))
	t.Logf("enqueued %d jobs in %v", jobs, time.Since(start).Round(time.Millisecond))
	start = time.Now()

	total := sqltest.RunWorkers(t, 3, b.Schema()+" "+sqltest.PostgresURL(t))
	t.Logf("3 workers drained them in %v", time.Since(start).Round(time.Millisecond))
	if total != jobs {
		t.Errorf("workers report %d completions, want %d", total, jobs)
	}

	ctx := context.Background()
	var succeeded, runs, succeededRuns, distinct, doubled int64
	q := func(sql string, dst *int64) {
		t.Helper()
		if err := b.Pool().QueryRow(ctx, sql).Scan(dst); err != nil {
			t.Fatal(err)
		}
	}
	s := `"` + b.Schema() + `".`
	q("SELECT count(*) FROM "+s+"jobs WHERE state = 'succeeded'", &succeeded)
	q("SELECT count(*) FROM "+s+"runs", &runs)
	q("SELECT count(*) FROM "+s+"runs WHERE status = 'succeeded'", &succeededRuns)
	q("SELECT count(DISTINCT job_id) FROM "+s+"runs WHERE status = 'succeeded'", &distinct)
	q("SELECT count(*) FROM (SELECT job_id FROM "+s+"runs WHERE status = 'succeeded' GROUP BY job_id HAVING count(*) <> 1) d", &doubled)
	if succeeded != jobs || runs != jobs || succeededRuns != jobs || distinct != jobs || doubled != 0 {
		t.Fatalf("succeeded jobs %d, runs %d, succeeded runs %d over %d jobs, jobs with more than one: %d; want %d each and 0",
			succeeded, runs, succeededRuns, distinct, doubled, jobs)
	}
}
