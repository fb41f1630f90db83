package postgres_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/core"
)

// TestMigrateOnlineWithWorkers builds the schema of migration 4, fills it,
// and applies the later migrations while two workers claim and complete
// and a producer enqueues: no call fails, every job succeeds exactly once,
// and enqueues notify in the new form afterwards.
func TestMigrateOnlineWithWorkers(t *testing.T) {
	const before, during = 20_000, 5_000
	ctx := context.Background()
	url := sqltest.PostgresURL(t)
	pool := sqltest.Pool(t, url, 8)
	schema := sqltest.Schema(t, pool)
	open := func() *postgres.Backend {
		b, err := postgres.New(pool, postgres.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	old := open()
	if err := postgres.MigrateTo(ctx, old, 4); err != nil {
		t.Fatal(err)
	}
	reqs := func(n int) []core.EnqueueRequest {
		out := make([]core.EnqueueRequest, n)
		for i := range out {
			out[i] = core.EnqueueRequest{Queue: "q", Task: "t"}
		}
		return out
	}
	for range before / 1000 {
		if _, err := old.Enqueue(ctx, reqs(1000)); err != nil {
			t.Fatal(err)
		}
	}

	var completed atomic.Int64
	var produced atomic.Bool
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for w := range 2 {
		b := open()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w" + string(rune('0'+w)), Limit: 100, LeaseTTL: time.Minute})
				if err != nil {
					errs <- err
					return
				}
				if len(jobs) == 0 {
					if produced.Load() {
						return
					}
					time.Sleep(5 * time.Millisecond)
					continue
				}
				items := make([]core.Completion, len(jobs))
				for i, j := range jobs {
					items[i] = core.Completion{Lease: j.Lease}
				}
				per, err := b.Complete(ctx, items)
				if err != nil {
					errs <- err
					return
				}
				for _, err := range per {
					if err != nil {
						errs <- err
						return
					}
					completed.Add(1)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer produced.Store(true)
		for range during / 100 {
			if _, err := old.Enqueue(ctx, reqs(100)); err != nil {
				errs <- err
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	for completed.Load() < before/4 {
		time.Sleep(time.Millisecond)
	}
	if err := open().Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("migrated with %d of %d jobs completed", completed.Load(), before+during)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	s := `"` + schema + `".`
	var jobs, succeeded, runs, version int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE state = 'succeeded'),
		(SELECT count(*) FROM `+s+`runs WHERE status = 'succeeded'), (SELECT max(version) FROM `+s+`boson_migrations)
		FROM `+s+`jobs`).Scan(&jobs, &succeeded, &runs, &version); err != nil {
		t.Fatal(err)
	}
	if jobs != before+during || succeeded != jobs || runs != jobs || completed.Load() != int64(jobs) {
		t.Fatalf("%d jobs, %d succeeded, %d succeeded runs, %d completions; want %d of each", jobs, succeeded, runs, completed.Load(), before+during)
	}
	if version < 5 {
		t.Fatalf("schema at version %d after Migrate", version)
	}

	// After the migration an enqueue names its position in the notification.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `LISTEN "boson_`+schema+`"`); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Enqueue(ctx, []core.EnqueueRequest{{Queue: "q", Task: "t", Priority: -3}}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := conn.WaitForNotification(wctx)
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(n.Payload); len(f) != 4 || f[0] != "q" || f[1] != "-3" || f[2] != f[3] {
		t.Fatalf("notification payload %q, want \"q -3 <run_at> <run_at>\"", n.Payload)
	}
}
