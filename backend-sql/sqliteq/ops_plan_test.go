package sqliteq_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/core"
)

// TestSearchPlans fills a file with jobs and checks that the searches the
// README says use an index search it instead of scanning the table.
func TestSearchPlans(t *testing.T) {
	rows := 100_000
	if raceEnabled {
		rows = 10_000
	}
	ctx := context.Background()
	b := newBackend(t, sqliteq.Options{Synchronous: sqliteq.SyncNormal})
	if _, err := b.DB().ExecContext(ctx, `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?)
		INSERT INTO jobs (id, queue, task, headers, state, max_attempts, run_at, created_at, finished_at)
		SELECT printf('%026d', n), 'q' || (n % 10), 't' || (n % 20), '{"tenant":"c' || (n % 500) || '"}',
			CASE WHEN n % 3 = 0 THEN 'succeeded' ELSE 'queued' END, 5, 1000000 + n, 1000000 + n,
			CASE WHEN n % 3 = 0 THEN 2000000 + n ELSE 0 END FROM g`, rows); err != nil {
		t.Fatal(err)
	}
	if _, err := b.DB().ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	at := func(us int64) time.Time { return time.UnixMicro(us) }
	for name, c := range map[string]struct {
		s    core.JobSearch
		want string
	}{
		"id prefix":        {core.JobSearch{IDPrefix: "0000000000000000000000012"}, "sqlite_autoindex_jobs_1 (id>? AND id<?)"},
		"ids":              {core.JobSearch{IDs: []string{"00000000000000000000000012", "x"}}, "sqlite_autoindex_jobs_1 (id=?)"},
		"finished":         {core.JobSearch{Finished: core.TimeRange{From: at(2000000 + int64(rows) - 50)}}, "jobs_finished"},
		"created from":     {core.JobSearch{Created: core.TimeRange{From: time.Now()}}, "sqlite_autoindex_jobs_1 (id>?)"},
		"queue and header": {core.JobSearch{JobFilter: core.JobFilter{Queue: "q3"}, HeaderKey: "tenant", HeaderValue: "c7"}, "jobs_queue (queue=?)"},
		"task and created": {core.JobSearch{JobFilter: core.JobFilter{Task: "t3"}, Created: core.TimeRange{To: at(1000100)}}, "jobs_task_created (task=? AND created_at<?)"},
	} {
		plan, err := b.ExplainSearch(ctx, c.s)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s:\n%s", name, plan)
		if !strings.Contains(plan, c.want) {
			t.Errorf("%s: the plan does not use %s:\n%s", name, c.want, plan)
		}
	}
	if plan, err := b.ExplainSearch(ctx, core.JobSearch{IDs: []string{"\xff"}}); err != nil || !strings.Contains(plan, "no statement") {
		t.Fatalf("search of an impossible id: %q, %v", plan, err)
	}
}
