package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/core"
)

// TestRetryRacesEnqueueOfItsKey retries a cancelled while-active job while
// a transaction that enqueued another job with the same key is still open,
// so that the retry's check sees no holder and its update waits on the key.
// Once that transaction commits, the retry (one job, or a bulk retry) must
// report core.ErrIdempotencyConflict and change nothing.
func TestRetryRacesEnqueueOfItsKey(t *testing.T) {
	ctx := context.Background()
	url := sqltest.PostgresURL(t)
	pool := sqltest.Pool(t, url, 6)
	schema := sqltest.Schema(t, pool)
	b, err := postgres.New(pool, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if err := b.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, bulk := range []bool{false, true} {
		name := map[bool]string{false: "Retry", true: "BulkStep"}[bulk]
		t.Run(name, func(t *testing.T) {
			key := "k-" + name
			req := core.EnqueueRequest{Queue: "q", Task: "t", IdempotencyKey: key, Unique: core.UniqueWhileActive}
			res, err := b.Enqueue(ctx, []core.EnqueueRequest{req})
			if err != nil {
				t.Fatal(err)
			}
			old := res[0].Job.ID
			if _, err := b.Cancel(ctx, old, "done with it"); err != nil {
				t.Fatal(err)
			}
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			var txPID int
			if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&txPID); err != nil {
				t.Fatal(err)
			}
			req.Payload = []byte(`{"new":true}`)
			held, err := b.EnqueueTx(ctx, tx, []core.EnqueueRequest{req})
			if err != nil || held[0].Reused {
				t.Fatalf("enqueue in tx: %+v %v", held, err)
			}
			done := make(chan error, 1)
			go func() {
				if !bulk {
					_, err := b.Retry(ctx, old)
					done <- err
					return
				}
				r, err := b.BulkStep(ctx, core.BulkRequest{Action: core.BulkRetry, Search: core.JobSearch{IDs: []string{old}}, Limit: 10})
				switch {
				case err != nil:
				case r.Failed != 1 || r.Changed != 0 || len(r.Errors) != 1:
					err = fmt.Errorf("bulk retry: %+v", r)
				case strings.Contains(r.Errors[0].Error, core.ErrIdempotencyConflict.Error()):
					err = core.ErrIdempotencyConflict
				default:
					err = errors.New("bulk error does not name the conflict: " + r.Errors[0].Error)
				}
				done <- err
			}()
			// Commit only once the retry waits on the transaction's key.
			deadline := time.Now().Add(20 * time.Second)
			for {
				var waiting int
				if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", txPID).Scan(&waiting); err != nil {
					t.Fatal(err)
				}
				if waiting > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the retry never waited on the open transaction")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-done; !errors.Is(err, core.ErrIdempotencyConflict) {
				t.Fatalf("%s racing the key's enqueue: got %v, want ErrIdempotencyConflict", name, err)
			}
			j, err := b.GetJob(ctx, old)
			if err != nil || j.State != core.StateCancelled {
				t.Fatalf("the refused retry changed the job: %+v %v", j, err)
			}
			if h, err := b.GetJob(ctx, held[0].Job.ID); err != nil || h.State != core.StateQueued {
				t.Fatalf("the key's new holder: %+v %v", h, err)
			}
		})
	}
}
