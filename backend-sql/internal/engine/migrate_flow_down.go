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
