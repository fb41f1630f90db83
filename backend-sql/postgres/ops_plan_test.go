package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/core"
)

// TestSearchPlans fills a schema with 100,000 jobs and checks that the
// searches the README says use an index have the server walk it, and
// that ids bound a created range only when a clock is configured.
func TestSearchPlans(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, postgres.Options{})
	clocked, err := postgres.New(b.Pool(), postgres.Options{Schema: b.Schema(), Clock: core.NewManualClock(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = clocked.Close() })
	jobs := `"` + b.Schema() + `".jobs`
	if _, err := b.Pool().Exec(ctx, `INSERT INTO `+jobs+` (id, queue, task, headers, state, max_attempts, run_at, created_at, finished_at)
		SELECT lpad(n::text, 26, '0'), 'q' || (n % 10), 't' || (n % 20), '{"tenant":"c' || (n % 500) || '"}',
			CASE WHEN n % 3 = 0 THEN 'succeeded' ELSE 'queued' END, 5, 1000000 + n, 1000000 + n,
			CASE WHEN n % 3 = 0 THEN 2000000 + n ELSE 0 END FROM generate_series(1, 100000) AS n`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Pool().Exec(ctx, "ANALYZE "+jobs); err != nil {
		t.Fatal(err)
	}
	at := func(us int64) time.Time { return time.UnixMicro(us) }
	for name, c := range map[string]struct {
		b       *postgres.Backend
		s       core.JobSearch
		want    string
		without string
	}{
		"id prefix":            {b, core.JobSearch{IDPrefix: "0000000000000000000000012"}, "Index Cond: ((id >= ", ""},
		"ids":                  {b, core.JobSearch{IDs: []string{"00000000000000000000000012", "x"}}, "Index Cond: (id = ANY (", ""},
		"finished":             {b, core.JobSearch{Finished: core.TimeRange{From: at(2100000 - 50)}}, "jobs_finished", ""},
		"created from, clock":  {clocked, core.JobSearch{Created: core.TimeRange{From: time.Now()}}, "Index Cond: (id >= ", ""},
		"created from, server": {b, core.JobSearch{Created: core.TimeRange{From: time.Now()}}, "created_at >= ", "id >= "},
		"task and created":     {b, core.JobSearch{JobFilter: core.JobFilter{Task: "t3"}, Created: core.TimeRange{To: at(1000100)}}, "jobs_task_created", ""},
	} {
		plan, err := c.b.ExplainSearch(ctx, c.s)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s:\n%s", name, plan)
		if !strings.Contains(plan, c.want) {
			t.Errorf("%s: the plan has no %q:\n%s", name, c.want, plan)
		}
		if c.without != "" && strings.Contains(plan, c.without) {
			t.Errorf("%s: the plan has %q:\n%s", name, c.without, plan)
		}
	}
}
