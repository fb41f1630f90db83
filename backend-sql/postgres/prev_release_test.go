package postgres_test

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
