package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/core"
)

// TestFlowCountsOnlyWhatIsLimited checks the counter rows: none while no
// config limits the task (no hot row for plain work), the true running
// count when a limit is stored while jobs already run, kept in step by
// claims and completions, and gone once the limit is removed.
func TestFlowCountsOnlyWhatIsLimited(t *testing.T) {
	ctx := context.Background()
	pool := sqltest.Pool(t, sqltest.PostgresURL(t), 4)
	schema := sqltest.Schema(t, pool)
	b := openSchema(t, pool, schema)
	if err := b.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	rows := func() map[string]int64 {
		t.Helper()
		r, err := pool.Query(ctx, sqltest.FlowCountsSQL(fmt.Sprintf("%q.flow_counts", schema)))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		return sqltest.FlowCountRows(t, r)
	}
	var reqs []core.EnqueueRequest
	for i := range 10 {
		reqs = append(reqs, core.EnqueueRequest{Queue: "q", Task: "t", LimitKey: fmt.Sprintf("k%d", i%2)})
	}
	if _, err := b.Enqueue(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	claim := func(n int) []core.Job {
		t.Helper()
		jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: n, LeaseTTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	first := claim(3)
	if len(first) != 3 || len(rows()) != 0 {
		t.Fatalf("claimed %d without limits; counter rows %v, want none", len(first), rows())
	}
	if err := b.PutTaskConfig(ctx, core.TaskConfig{Task: "t", MaxRunning: 5, MaxRunningPerKey: 2}); err != nil {
		t.Fatal(err)
	}
	k0, k1 := 0, 0
	for _, j := range first {
		if j.LimitKey == "k0" {
			k0++
		} else {
			k1++
		}
	}
	// Three running jobs reach the per-key limit of 2: the task is in
	// keyed mode (its marker row), with its key rows.
	want := map[string]int64{"t:t:": 3, "m:t:": 0}
	if k0 > 0 {
		want["k:t:k0"] = int64(k0)
	}
	if k1 > 0 {
		want["k:t:k1"] = int64(k1)
	}
	if got := rows(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after storing the limit: %v, want the recount %v", got, want)
	}
	more := claim(10)
	if len(more) != 1 {
		t.Fatalf("claimed %d more under MaxRunningPerKey 2 with keys at %d and %d, want 1", len(more), k0, k1)
	}
	if got := rows(); got["t:t:"] != 4 || got["k:t:k0"] != 2 || got["k:t:k1"] != 2 {
		t.Fatalf("after the claim: %v", got)
	}
	items := []core.Completion{}
	for _, j := range append(first, more...) {
		items = append(items, core.Completion{Lease: j.Lease})
	}
	if errs, err := b.Complete(ctx, items); err != nil || errs[0] != nil {
		t.Fatalf("Complete: %v %v", err, errs)
	}
	if got := rows(); got["t:t:"] != 0 || got["k:t:k0"] != 0 || got["k:t:k1"] != 0 {
		t.Fatalf("after the completions: %v", got)
	}
	if err := b.PutTaskConfig(ctx, core.TaskConfig{Task: "t"}); err != nil {
		t.Fatal(err)
	}
	if got := rows(); len(got) != 0 {
		t.Fatalf("after removing the limits: %v, want no rows", got)
	}
}
