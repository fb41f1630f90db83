package postgres_test

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/core"
)

// claimScanBuffers returns the shared buffers (hit + read) that the scan
// of the jobs_claim index touched in an analysed claim plan.
func claimScanBuffers(t *testing.T, plan string) int {
	t.Helper()
	m := regexp.MustCompile(`Index Scan using jobs_claim on [^\n]*\n(?:[^\n]*(?:Cond|Filter)[^\n]*\n)*\s*Buffers: shared( hit=(\d+))?( read=(\d+))?`).FindStringSubmatch(plan)
	if m == nil {
		t.Fatalf("no buffer counts in the plan:\n%s", plan)
	}
	hit, _ := strconv.Atoi(m[2])
	read, _ := strconv.Atoi(m[4])
	return hit + read
}

// drain claims and completes n jobs of queue in batches of batch.
func drain(t *testing.T, b core.QueueBackend, queue string, n, batch int) {
	t.Helper()
	ctx := context.Background()
	for done := 0; done < n; {
		jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: queue, WorkerID: "w", Limit: min(batch, n-done), LeaseTTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) == 0 {
			t.Fatalf("claim returned nothing after %d of %d jobs", done, n)
		}
		items := make([]core.Completion, len(jobs))
		for i, j := range jobs {
			items[i] = core.Completion{Lease: j.Lease}
		}
		per, err := b.Complete(ctx, items)
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range per {
			if err != nil {
				t.Fatal(err)
			}
		}
		done += len(jobs)
	}
}

// TestClaimCursorSkipsDeadEntries holds the xmin horizon with an open
// REPEATABLE READ transaction, so that nothing can remove the dead index
// entries that claims leave, drains most of a backlog, and compares the
// plan of the next claim from the head of the claim index (what every
// claim did before cursors) with the plan after the cursor: the cursor's
// claim's index scan must touch a small fraction of the head claim's
// buffers.
func TestClaimCursorSkipsDeadEntries(t *testing.T) {
	const backlog, claimed = 30_000, 25_000
	ctx := context.Background()
	b := newBackend(t, postgres.Options{})
	s := `"` + b.Schema() + `".`
	if _, err := b.Pool().Exec(ctx, `INSERT INTO `+s+`jobs (id, queue, task, state, max_attempts, run_at, created_at)
		SELECT lpad(g::text, 26, '0'), 'q', 't', 'queued', 5, 1000000 + g, 1000000 + g
		FROM generate_series(1, $1::int) g`, backlog); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Pool().Exec(ctx, "ANALYZE "+s+"jobs"); err != nil {
		t.Fatal(err)
	}
	holder, err := b.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Rollback(ctx) }()
	if _, err := holder.Exec(ctx, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := holder.QueryRow(ctx, "SELECT count(*) FROM "+s+"jobs").Scan(&n); err != nil { // takes the snapshot
		t.Fatal(err)
	}

	drain(t, b, "q", claimed, 500)

	head, err := postgres.New(b.Pool(), postgres.Options{Schema: b.Schema(), ClaimRescan: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer head.Close()
	headPlan, err := head.ExplainClaim(ctx, "q", 100, true)
	if err != nil {
		t.Fatal(err)
	}
	cursorPlan, err := b.ExplainClaim(ctx, "q", 100, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("claim of 100 after %d claimed and completed jobs, xmin held, from the head:\n%s", claimed, headPlan)
	t.Logf("the same claim after the cursor:\n%s", cursorPlan)
	hb, cb := claimScanBuffers(t, headPlan), claimScanBuffers(t, cursorPlan)
	t.Logf("buffers of the claim index scan: head %d, cursor %d", hb, cb)
	if cb*10 > hb {
		t.Fatalf("the claim index scan after the cursor touched %d buffers, from the head %d: want under a tenth", cb, hb)
	}
}

// TestClaimCursorSeesOtherProcessEnqueue has one backend claim a queue, so
// that its cursor moves past the head, while another backend (as another
// process) enqueues a job of a higher priority, which sorts before the
// cursor: the notification names its position, and the first backend's
// next claim returns it, long before a rescan.
func TestClaimCursorSeesOtherProcessEnqueue(t *testing.T) {
	ctx := context.Background()
	worker := newBackend(t, postgres.Options{})
	other, err := postgres.New(worker.Pool(), postgres.Options{Schema: worker.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	wake, stop := worker.Subscribe("q")
	defer stop()
	reqs := make([]core.EnqueueRequest, 50)
	for i := range reqs {
		reqs[i] = core.EnqueueRequest{Queue: "q", Task: "t"}
	}
	if _, err := other.Enqueue(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	drain(t, worker, "q", 20, 10)
	// Drain the wake-ups so far, then enqueue from the other backend.
	for len(wake) > 0 {
		<-wake
	}
	res, err := other.Enqueue(ctx, []core.EnqueueRequest{{Queue: "q", Task: "t", Priority: -5}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up after the other backend's enqueue")
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		jobs, err := worker.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 1, LeaseTTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) == 1 && jobs[0].ID == res[0].Job.ID {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("claim returned %v, want the priority -5 job %s", jobs, res[0].Job.ID)
		}
		// A tick may have woken the subscriber before the notification
		// arrived: wait for the next signal.
		select {
		case <-wake:
		case <-time.After(100 * time.Millisecond):
		}
	}
}
