package postgres_test

import (
	"context"
	"fmt"
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

// TestMigrateOnlineWithWorkers builds the schema of migration 5, fills it
// as the release before flow control does (its boson_enqueue), and
// applies migrations 6 to 8 (flow control, declared queues, fan-in) while two workers of that release (its claim and
// completion statements, prev_release_test.go) claim and complete and a
// producer of that release enqueues: no call fails, every job succeeds
// exactly once, and this release enqueues and notifies afterwards.
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
	if err := postgres.MigrateTo(ctx, old, 5); err != nil {
		t.Fatal(err)
	}
	render := func(sql string) string {
		sql = strings.ReplaceAll(sql, "{s}", `"`+schema+`".`)
		var b strings.Builder
		n := 0
		for _, r := range sql {
			if r == '?' {
				n++
				fmt.Fprintf(&b, "$%d", n)
				continue
			}
			b.WriteRune(r)
		}
		return b.String()
	}
	channel := "boson_" + schema
	enqueueSQL := fmt.Sprintf(`SELECT count(*) FROM %q.boson_enqueue(NULL, $1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[],
		$6::int4[], $7::int4[], $8::text[], $9::int8[], $10::int8[], $11::text[], $12::text[], $13::text[], $14::int8[], $15)`, schema)
	enqueue := func(n int) error {
		ids, queues, tasks, heads, retries, fps, actors := make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		payloads, keys := make([][]byte, n), make([]*string, n)
		prio, att := make([]int32, n), make([]int32, n)
		zero := make([]int64, n)
		for i := range ids {
			ids[i], queues[i], tasks[i], att[i] = core.NewID(time.Now()), "q", "t", 3
		}
		_, err := pool.Exec(ctx, enqueueSQL, ids, queues, tasks, payloads, heads, prio, att, retries, zero, zero, keys, fps, actors, zero, channel)
		return err
	}
	for range before / 1000 {
		if err := enqueue(1000); err != nil {
			t.Fatal(err)
		}
	}
	claimSQL, completeSQL := render(prevClaimSQL), render(prevCompleteSQL)

	var completed atomic.Int64
	var produced atomic.Bool
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				rows, err := pool.Query(ctx, claimSQL, nil, "q", "q", "q", "q", 100, fmt.Sprintf("w%d", w), int64(time.Minute/time.Microsecond))
				if err != nil {
					errs <- err
					return
				}
				var ids []string
				var tokens []int64
				for rows.Next() {
					var id string
					var token int64
					if err := rows.Scan(&id, &token); err != nil {
						errs <- err
						return
					}
					ids, tokens = append(ids, id), append(tokens, token)
				}
				if err := rows.Err(); err != nil {
					errs <- err
					return
				}
				if len(ids) == 0 {
					if produced.Load() {
						return
					}
					time.Sleep(5 * time.Millisecond)
					continue
				}
				tag, err := pool.Exec(ctx, completeSQL, nil, ids, tokens, make([][]byte, len(ids)), channel)
				if err != nil {
					errs <- err
					return
				}
				if tag.RowsAffected() != int64(len(ids)) {
					errs <- fmt.Errorf("completed %d of %d", tag.RowsAffected(), len(ids))
					return
				}
				completed.Add(int64(len(ids)))
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer produced.Store(true)
		for range during / 100 {
			if err := enqueue(100); err != nil {
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
	if version < 8 {
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
