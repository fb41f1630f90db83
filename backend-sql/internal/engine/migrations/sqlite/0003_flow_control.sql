-- Flow control: the flow fields of a job, the gates that keep held-back
-- jobs out of the claim index, the running counts and start windows of
-- limited tasks, keys and queues, and the sequences' wake-up marks (see
-- the Postgres migration 6). The claim and idempotency indexes are
-- rebuilt under their names with the new predicates: a process of the
-- previous release names jobs_claim in INDEXED BY with the old
-- predicate, so stop those before applying it.
ALTER TABLE {s}jobs ADD COLUMN unique_mode text NOT NULL DEFAULT '';
ALTER TABLE {s}jobs ADD COLUMN unique_period integer NOT NULL DEFAULT 0;
ALTER TABLE {s}jobs ADD COLUMN key_expires_at integer NOT NULL DEFAULT 0;
ALTER TABLE {s}jobs ADD COLUMN key_released integer NOT NULL DEFAULT 0;
ALTER TABLE {s}jobs ADD COLUMN limit_key text;
ALTER TABLE {s}jobs ADD COLUMN sequence_key text;
ALTER TABLE {s}jobs ADD COLUMN seq_gate integer NOT NULL DEFAULT 0;
ALTER TABLE {s}jobs ADD COLUMN seq_hold integer NOT NULL DEFAULT 0;
ALTER TABLE {s}jobs ADD COLUMN key_gate integer NOT NULL DEFAULT 0;
ALTER TABLE {s}task_configs ADD COLUMN max_running integer NOT NULL DEFAULT 0;
ALTER TABLE {s}task_configs ADD COLUMN max_running_per_key integer NOT NULL DEFAULT 0;
ALTER TABLE {s}task_configs ADD COLUMN max_starts_per_second integer NOT NULL DEFAULT 0;
ALTER TABLE {s}task_configs ADD COLUMN max_starts_per_second_per_key integer NOT NULL DEFAULT 0;
ALTER TABLE {s}task_configs ADD COLUMN hold_sequence_on_failure integer NOT NULL DEFAULT 0;
ALTER TABLE {s}queue_configs ADD COLUMN max_running integer NOT NULL DEFAULT 0;

DROP INDEX jobs_claim;
CREATE INDEX jobs_claim ON {s}jobs (queue, priority, run_at, id)
    WHERE state IN ('queued', 'sleeping') AND seq_gate = 0 AND key_gate = 0;
DROP INDEX jobs_idempotency;
CREATE UNIQUE INDEX jobs_idempotency ON {s}jobs (queue, idempotency_key)
    WHERE idempotency_key IS NOT NULL AND key_released = 0 AND (unique_mode <> 'while_active' OR state IN ('queued', 'running', 'sleeping'));
CREATE INDEX jobs_sequence ON {s}jobs (queue, sequence_key, id)
    WHERE sequence_key IS NOT NULL AND (state IN ('queued', 'running', 'sleeping') OR seq_hold <> 0);
CREATE INDEX jobs_sequence_busy ON {s}jobs (queue, sequence_key)
    WHERE sequence_key IS NOT NULL AND state IN ('running', 'sleeping');
CREATE INDEX jobs_key_gate ON {s}jobs (task, limit_key, priority, run_at, id) WHERE key_gate <> 0;
CREATE INDEX jobs_limit_key ON {s}jobs (task, limit_key) WHERE limit_key IS NOT NULL;

CREATE TABLE {s}flow_counts (
    scope text NOT NULL,
    name  text NOT NULL,
    lkey  text NOT NULL,
    n     integer NOT NULL DEFAULT 0,
    ready integer NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, name, lkey)
);
CREATE INDEX flow_counts_ready ON {s}flow_counts (scope) WHERE ready <> 0;
CREATE TABLE {s}flow_starts (
    task text NOT NULL,
    lkey text NOT NULL,
    sec  integer NOT NULL,
    n    integer NOT NULL DEFAULT 0,
    PRIMARY KEY (task, lkey, sec)
);
CREATE TABLE {s}flow_seqs (
    queue text NOT NULL,
    seq   text NOT NULL,
    ready integer NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, seq)
);
CREATE INDEX flow_seqs_ready ON {s}flow_seqs (queue) WHERE ready <> 0;
CREATE TABLE {s}flow_switch (
    id     integer PRIMARY KEY,
    seq    integer NOT NULL DEFAULT 0,
    limits integer NOT NULL DEFAULT 0
);
INSERT INTO {s}flow_switch (id) VALUES (1);
