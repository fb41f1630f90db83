package sqliteq_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/sqliteq"
)

// TestMultiProcessExactlyOnce has three worker processes drain 10,000
// jobs from one file, then checks in the database that every job
// succeeded exactly once: one succeeded run per job, no other runs.
func TestMultiProcessExactlyOnce(t *testing.T) {
	const jobs = 10_000
	path := filepath.Join(t.TempDir(), "mp.db")
	b, err := sqliteq.Open(context.Background(), path, sqliteq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	sqltest.EnqueueAll(t, b, sqltest.Jobs("mp", jobs))
	t.Logf("enqueued %d jobs in %v", jobs, time.Since(start).Round(time.Millisecond))
	start = time.Now()

	total := sqltest.RunWorkers(t, 3, path)
	t.Logf("3 workers drained them in %v", time.Since(start).Round(time.Millisecond))
	if total != jobs {
		t.Errorf("workers report %d completions, want %d", total, jobs)
	}

	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var succeeded, runs, succeededRuns, distinct, doubled int64
	q := func(query string, dst *int64) {
		t.Helper()
		if err := db.QueryRow(query).Scan(dst); err != nil {
			t.Fatal(err)
		}
	}
	q("SELECT count(*) FROM jobs WHERE state = 'succeeded'", &succeeded)
	q("SELECT count(*) FROM runs", &runs)
	q("SELECT count(*) FROM runs WHERE status = 'succeeded'", &succeededRuns)
	q("SELECT count(DISTINCT job_id) FROM runs WHERE status = 'succeeded'", &distinct)
	q("SELECT count(*) FROM (SELECT job_id FROM runs WHERE status = 'succeeded' GROUP BY job_id HAVING count(*) <> 1)", &doubled)
	if succeeded != jobs || runs != jobs || succeededRuns != jobs || distinct != jobs || doubled != 0 {
		t.Fatalf("succeeded jobs %d, runs %d, succeeded runs %d over %d jobs, jobs with more than one: %d; want %d each and 0",
			succeeded, runs, succeededRuns, distinct, doubled, jobs)
	}
}
