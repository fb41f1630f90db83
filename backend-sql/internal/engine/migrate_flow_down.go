package engine

// pgFlowDown undoes Postgres migration 6: it drops boson_enqueue2 (the
// release before it calls boson_enqueue, which migration 6 left alone),
// the flow tables and columns, and puts the claim and idempotency
// indexes of migration 5 back. It fails, changing nothing, when several
// jobs of a queue carry one idempotency key (which only the unique modes
// of migration 6 allow): delete those first.
const pgFlowDown = `DROP FUNCTION {s}boson_enqueue2(bigint, text[], text[], text[], bytea[], text[], integer[], integer[], text[], bigint[],
    bigint[], text[], text[], text[], bigint[], text, text[], bigint[], text[], text[]);
DROP TABLE {s}flow_counts, {s}flow_starts, {s}flow_seqs, {s}flow_switch;
DROP INDEX {s}jobs_claim;
CREATE INDEX jobs_claim ON {s}jobs (queue, priority, run_at, id) WHERE state IN ('queued', 'sleeping');
DROP INDEX {s}jobs_idempotency;
CREATE UNIQUE INDEX jobs_idempotency ON {s}jobs (queue, idempotency_key) WHERE idempotency_key IS NOT NULL;
DROP INDEX {s}jobs_sequence, {s}jobs_sequence_busy, {s}jobs_key_gate, {s}jobs_limit_key;
ALTER TABLE {s}jobs DROP COLUMN unique_mode, DROP COLUMN unique_period, DROP COLUMN key_expires_at, DROP COLUMN key_released,
    DROP COLUMN limit_key, DROP COLUMN sequence_key, DROP COLUMN seq_gate, DROP COLUMN seq_hold, DROP COLUMN key_gate;
ALTER TABLE {s}task_configs DROP COLUMN max_running, DROP COLUMN max_running_per_key, DROP COLUMN max_starts_per_second,
    DROP COLUMN max_starts_per_second_per_key, DROP COLUMN hold_sequence_on_failure;
ALTER TABLE {s}queue_configs DROP COLUMN max_running;`

// sqliteFlowDown undoes SQLite migration 3 in the same way.
const sqliteFlowDown = `DROP TABLE flow_counts;
DROP TABLE flow_starts;
DROP TABLE flow_seqs;
DROP TABLE flow_switch;
DROP INDEX jobs_claim;
CREATE INDEX jobs_claim ON jobs (queue, priority, run_at, id) WHERE state IN ('queued', 'sleeping');
DROP INDEX jobs_idempotency;
CREATE UNIQUE INDEX jobs_idempotency ON jobs (queue, idempotency_key) WHERE idempotency_key IS NOT NULL;
DROP INDEX jobs_sequence;
DROP INDEX jobs_sequence_busy;
DROP INDEX jobs_key_gate;
DROP INDEX jobs_limit_key;
ALTER TABLE jobs DROP COLUMN unique_mode;
ALTER TABLE jobs DROP COLUMN unique_period;
ALTER TABLE jobs DROP COLUMN key_expires_at;
ALTER TABLE jobs DROP COLUMN key_released;
ALTER TABLE jobs DROP COLUMN limit_key;
ALTER TABLE jobs DROP COLUMN sequence_key;
ALTER TABLE jobs DROP COLUMN seq_gate;
ALTER TABLE jobs DROP COLUMN seq_hold;
ALTER TABLE jobs DROP COLUMN key_gate;
ALTER TABLE task_configs DROP COLUMN max_running;
ALTER TABLE task_configs DROP COLUMN max_running_per_key;
ALTER TABLE task_configs DROP COLUMN max_starts_per_second;
ALTER TABLE task_configs DROP COLUMN max_starts_per_second_per_key;
ALTER TABLE task_configs DROP COLUMN hold_sequence_on_failure;
ALTER TABLE queue_configs DROP COLUMN max_running;`

// flowKeyedDown undoes the flow_keyed migration (Postgres 10, SQLite 7):
// the previous release keeps a key row for every key of a task with a
// per-key limit, and a task row only for a task with a MaxRunning. The
// key rows of a task in keyed mode are exact and stay (with their marks);
// those of every other task with a per-key limit are counted from the
// running jobs (such a task has none, and no gated job: leaving keyed
// mode opened them all). The markers go, and so do the task rows that
// no MaxRunning needs.
const flowKeyedDown = `DELETE FROM {s}flow_counts WHERE scope = 'k' AND NOT EXISTS (SELECT 1 FROM {s}flow_counts m
    WHERE m.scope = 'm' AND m.name = {s}flow_counts.name AND m.lkey = '');
INSERT INTO {s}flow_counts (scope, name, lkey, n)
SELECT 'k', j.task, j.limit_key, count(*) FROM {s}jobs j JOIN {s}task_configs c ON c.task = j.task
WHERE c.max_running_per_key > 0 AND j.state = 'running' AND j.limit_key IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM {s}flow_counts m WHERE m.scope = 'm' AND m.name = j.task AND m.lkey = '')
GROUP BY j.task, j.limit_key;
DELETE FROM {s}flow_counts WHERE scope = 'm';
DELETE FROM {s}flow_counts WHERE scope = 't' AND NOT EXISTS (SELECT 1 FROM {s}task_configs c
    WHERE c.task = {s}flow_counts.name AND c.max_running > 0);`

// pgFlowKeyedDown is flowKeyedDown on Postgres, under the locks the
// migration takes (see 0010_flow_keyed.sql), so that its counts are
// exact while workers run.
const pgFlowKeyedDown = `SELECT pg_advisory_xact_lock(hashtext('boson.flow.{s}'));
LOCK TABLE {s}flow_counts IN SHARE ROW EXCLUSIVE MODE;
` + flowKeyedDown
