package sqltest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// KeyedBackend is what FlowKeyedMigration drives.
type KeyedBackend interface {
	core.QueueBackend
	core.FlowController
}

// FlowKeyedMigration checks the flow_keyed migration on a populated
// schema. Task "t" (MaxRunningPerKey 2, no MaxRunning) runs three jobs
// over two keys, which puts it in keyed mode, and task "u" (per-key
// limit 10) runs one, which does not; queued jobs of both wait. down
// undoes the migration: rows (the flow_counts rows as "scope:name:key"
// and their counts) must then hold the previous release's layout, a key
// row per running key of every task with a per-key limit and no task
// or marker rows. up applies it again: "t" is in keyed mode with its
// exact key rows, "u" has its task row, and claims keep every key within
// its limit until every job has run.
func FlowKeyedMigration(t *testing.T, b KeyedBackend, down, up func() error, rows func() map[string]int64) {
	t.Helper()
	ctx := context.Background()
	for _, c := range []core.TaskConfig{{Task: "t", MaxRunningPerKey: 2}, {Task: "u", MaxRunningPerKey: 10}} {
		if err := b.PutTaskConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	var reqs []core.EnqueueRequest
	for i := range 12 {
		reqs = append(reqs, core.EnqueueRequest{Queue: "q", Task: "t", LimitKey: fmt.Sprintf("k%d", i%2)})
	}
	if _, err := b.Enqueue(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	claim := func(queue string, n int) []core.Job {
		t.Helper()
		jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: queue, WorkerID: "w", Limit: n, LeaseTTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	running := claim("q", 3)
	if _, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "q2", Task: "u", LimitKey: "a"}, {Queue: "q2", Task: "u", LimitKey: "a"}}); err != nil {
		t.Fatal(err)
	}
	running = append(running, claim("q2", 1)...)
	if len(running) != 4 {
		t.Fatalf("claimed %d, want 4", len(running))
	}
	perKey := map[string]int64{}
	for _, j := range running {
		perKey[j.Task+":"+j.LimitKey]++
	}
	if err := down(); err != nil {
		t.Fatal(err)
	}
	old := map[string]int64{}
	for k, n := range perKey {
		old["k:"+k] = n
	}
	if got := rows(); fmt.Sprint(got) != fmt.Sprint(old) {
		t.Fatalf("after the down step: %v, want the key rows of the previous release %v", got, old)
	}
	if err := up(); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"t:t:": 3, "t:u:": 1, "m:t:": 0, "m:u:": 0}
	for k, n := range perKey {
		want["k:"+k] = n
	}
	if got := rows(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the migration: %v, want %v", got, want)
	}
	// Drain: complete what runs, claim the rest, never over a key's limit.
	for round := 0; len(running) > 0; round++ {
		if round > 50 {
			t.Fatal("the jobs do not drain")
		}
		items := make([]core.Completion, len(running))
		for i, j := range running {
			items[i] = core.Completion{Lease: j.Lease}
		}
		if errs, err := b.Complete(ctx, items); err != nil || errs[0] != nil {
			t.Fatalf("Complete: %v %v", err, errs)
		}
		running = append(claim("q", 10), claim("q2", 10)...)
		keys := map[string]int{}
		for _, j := range running {
			keys[j.Task+":"+j.LimitKey]++
			if j.Task == "t" && keys[j.Task+":"+j.LimitKey] > 2 {
				t.Fatalf("claimed %d jobs of key %s, the limit is 2", keys[j.Task+":"+j.LimitKey], j.LimitKey)
			}
		}
		got, err := b.RunningByKey(ctx, "t", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range got {
			if k.Running > 2 {
				t.Fatalf("key %s runs %d, the limit is 2", k.Key, k.Running)
			}
		}
	}
	counts, err := b.CountJobs(ctx, core.JobFilter{})
	if err != nil || counts[core.StateSucceeded] != 14 {
		t.Fatalf("after the drain: %v, %v", counts, err)
	}
}

// FlowCountsSQL reads the flow_counts rows of table (its qualified name)
// as FlowCountRows wants them.
func FlowCountsSQL(table string) string {
	return "SELECT scope || ':' || name || ':' || lkey, n FROM " + table
}

// FlowCountRows collects the rows of FlowCountsSQL as "scope:name:key"
// to count; the caller closes r.
func FlowCountRows(t *testing.T, r interface {
	Next() bool
	Scan(dest ...any) error
}) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for r.Next() {
		var k string
		var n int64
		if err := r.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		out[k] = n
	}
	return out
}
