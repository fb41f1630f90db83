package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/core"
)

// TestStatsKeptForPlans: a jobs table that was analysed while empty and
// then grew is analysed again by the next maintenance pass (Rescue), so
// that the statements' plans are made for its size; a table whose
// statistics are current is left alone.
func TestStatsKeptForPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := sqltest.Pool(t, sqltest.PostgresURL(t), 4)
	b := newBackendOn(t, pool, postgres.Options{})
	schema := b.Schema()
	jobs := fmt.Sprintf("%q.jobs", schema)
	if _, err := pool.Exec(ctx, "ANALYZE "+jobs); err != nil {
		t.Fatal(err)
	}
	stats := func() (reltuples float64, analyses int64) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT c.reltuples, s.analyze_count FROM pg_class c
			JOIN pg_stat_all_tables s ON s.relid = c.oid WHERE c.oid = to_regclass($1)`, jobs).Scan(&reltuples, &analyses); err != nil {
			t.Fatal(err)
		}
		return reltuples, analyses
	}
	if n, _ := stats(); n > 0 {
		t.Fatalf("an empty table analysed has reltuples %v", n)
	}
	const size = 3000
	for i := 0; i < size; i += 1000 {
		reqs := make([]core.EnqueueRequest, 1000)
		for k := range reqs {
			reqs[k] = core.EnqueueRequest{Queue: "q", Task: "t"}
		}
		if _, err := b.Enqueue(ctx, reqs); err != nil {
			t.Fatal(err)
		}
	}
	// The server publishes its live-row counts within a second or so, and
	// an engine reads them at most every few seconds: poll for the outcome.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := b.Rescue(ctx, core.RescueRequest{Limit: 10}); err != nil {
			t.Fatal(err)
		}
		if n, _ := stats(); n >= size {
			break
		}
		if time.Now().After(deadline) {
			n, a := stats()
			t.Fatalf("after %d jobs and 30 s of rescues the jobs table's statistics say %v rows (%d analyses)", size, n, a)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Now current: more passes, past the engine's interval, analyse nothing.
	_, before := stats()
	for range 3 {
		time.Sleep(2 * time.Second)
		if _, err := b.Rescue(ctx, core.RescueRequest{Limit: 10}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Cleanup(ctx, core.CleanupRequest{FinishedBefore: time.Now(), Limit: 10}); err != nil {
			t.Fatal(err)
		}
	}
	if _, after := stats(); after != before {
		t.Fatalf("a table with current statistics was analysed %d more times", after-before)
	}
	// A change of a fifth of the rows, here 1,000 jobs finished and 1,000
	// more enqueued, without growth past four times: analysed again.
	jobs2, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", Limit: 1000, WorkerID: "w", LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	done := make([]core.Completion, len(jobs2))
	for i, j := range jobs2 {
		done[i] = core.Completion{Lease: j.Lease}
	}
	if _, err := b.Complete(ctx, done); err != nil {
		t.Fatal(err)
	}
	reqs := make([]core.EnqueueRequest, 1000)
	for k := range reqs {
		reqs[k] = core.EnqueueRequest{Queue: "q", Task: "t"}
	}
	if _, err := b.Enqueue(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		if _, err := b.Rescue(ctx, core.RescueRequest{Limit: 10}); err != nil {
			t.Fatal(err)
		}
		if _, a := stats(); a > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 1,000 jobs finished and 1,000 enqueued beside 3,000, 30 s of rescues did not analyse the table")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
