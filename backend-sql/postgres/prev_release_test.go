package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boson-go/boson/core"
)

// The claim and completion statements of the release before migration 6
// (as its engine sent them, with "{s}" for the schema and "?" for the
// arguments), so that a test can run that release's workers against a
// schema it migrates.
const (
	prevClaimSQL = `WITH clk AS (SELECT coalesce(?::bigint, (extract(epoch from now()) * 1000000)::bigint) AS t),
expired AS (
	UPDATE {s}jobs SET state = 'cancelled', finished_at = (SELECT t FROM clk),
		last_error = CASE WHEN first_started_at = 0 THEN 'deadline exceeded: max delay before first start' ELSE 'deadline exceeded: max duration from first start' END
	WHERE id = ANY (ARRAY(SELECT id FROM {s}jobs WHERE queue = ? AND state IN ('queued', 'sleeping')
		AND run_at <= (SELECT t FROM clk) AND deadline_at <= (SELECT t FROM clk)
		AND NOT EXISTS (SELECT 1 FROM {s}queue_configs WHERE queue = ? AND paused <> 0) FOR UPDATE SKIP LOCKED))
	RETURNING id),
picked AS (
	SELECT id FROM {s}jobs
	WHERE queue = ? AND state IN ('queued', 'sleeping') AND run_at <= (SELECT t FROM clk)
		AND (deadline_at IS NULL OR deadline_at > (SELECT t FROM clk))
		AND NOT EXISTS (SELECT 1 FROM {s}queue_configs WHERE queue = ? AND paused <> 0)
	ORDER BY priority, run_at, id LIMIT ? FOR UPDATE SKIP LOCKED),
numbered AS (SELECT id, row_number() OVER () AS n FROM picked),
claimed AS (
	UPDATE {s}jobs j SET state = 'running',
		attempt = CASE WHEN j.state = 'sleeping' THEN j.attempt ELSE j.attempt + 1 END,
		token = j.token + 1, worker_id = ?, lease_expires_at = (SELECT t FROM clk) + ?::bigint,
		first_started_at = CASE WHEN j.first_started_at = 0 THEN (SELECT t FROM clk) ELSE j.first_started_at END,
		deadline_at = CASE WHEN j.first_started_at = 0
			THEN (CASE WHEN j.max_duration > 0 THEN (SELECT t FROM clk) + (j.max_duration + 999) / 1000 ELSE NULL END)
			ELSE j.deadline_at END,
		started_at = (SELECT t FROM clk), run_id = j.id || '.' || (j.token + 1)::text
	FROM numbered WHERE j.id = numbered.id
	RETURNING j.*)
SELECT  id, token FROM claimed`
	prevCompleteSQL = `WITH clk AS (SELECT coalesce(?::bigint, (extract(epoch from now()) * 1000000)::bigint) AS t),
input AS (SELECT * FROM unnest(?::text[], ?::int8[], ?::bytea[]) AS i(id, token, result)),
done AS (
	UPDATE {s}jobs j SET state = 'succeeded', result = i.result, finished_at = (SELECT t FROM clk)
	FROM input i WHERE j.id = i.id AND j.state || '' = 'running' AND j.token = i.token
	RETURNING j.id, j.token, j.queue, j.run_id, j.attempt, j.worker_id, j.started_at, j.finished_at),
closed AS (
	INSERT INTO {s}runs (job_id, token, id, attempt, worker_id, status, started_at, finished_at)
	SELECT id, token, run_id, attempt, worker_id, 'succeeded', started_at, finished_at FROM done)
SELECT done.id, done.queue FROM done,
	(SELECT count(pg_notify(?, d.queue)) FROM (SELECT DISTINCT queue FROM done) d) n`
)

// prevRender expands a statement of the previous release for schema.
func prevRender(schema, sql string) string {
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

// prevEnqueue stores n plain jobs in queue q as the previous release
// does, through boson_enqueue (whose signature migrations 4 to 6 keep).
func prevEnqueue(ctx context.Context, pool *pgxpool.Pool, schema string, n int) error {
	ids, queues, tasks, heads, retries, fps, actors := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	payloads, keys := make([][]byte, n), make([]*string, n)
	prio, att := make([]int32, n), make([]int32, n)
	zero := make([]int64, n)
	for i := range ids {
		ids[i], queues[i], tasks[i], att[i] = core.NewID(time.Now()), "q", "t", 3
	}
	_, err := pool.Exec(ctx, fmt.Sprintf(`SELECT count(*) FROM %q.boson_enqueue(NULL, $1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[],
		$6::int4[], $7::int4[], $8::text[], $9::int8[], $10::int8[], $11::text[], $12::text[], $13::text[], $14::int8[], $15)`, schema),
		ids, queues, tasks, payloads, heads, prio, att, retries, zero, zero, keys, fps, actors, zero, "boson_"+schema)
	return err
}

// prevClaimComplete claims up to limit jobs of queue q and completes
// them as the previous release does, and returns how many it completed.
func prevClaimComplete(ctx context.Context, pool *pgxpool.Pool, schema string, limit int) (int, error) {
	rows, err := pool.Query(ctx, prevRender(schema, prevClaimSQL), nil, "q", "q", "q", "q", limit, "w", int64(time.Minute/time.Microsecond))
	if err != nil {
		return 0, err
	}
	var ids []string
	var tokens []int64
	for rows.Next() {
		var id string
		var token int64
		if err := rows.Scan(&id, &token); err != nil {
			return 0, err
		}
		ids, tokens = append(ids, id), append(tokens, token)
	}
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return 0, err
	}
	tag, err := pool.Exec(ctx, prevRender(schema, prevCompleteSQL), nil, ids, tokens, make([][]byte, len(ids)), "boson_"+schema)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}
