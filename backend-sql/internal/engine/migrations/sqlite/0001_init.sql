-- Jobs, runs, checkpoints and configs. Times are UTC microseconds since
-- the Unix epoch (0 = unset); durations are nanoseconds.
CREATE TABLE {s}jobs (
    id               text PRIMARY KEY,
    queue            text NOT NULL,
    task             text NOT NULL,
    payload          blob,
    headers          text NOT NULL DEFAULT '',
    priority         integer NOT NULL DEFAULT 0,
    state            text NOT NULL,
    attempt          integer NOT NULL DEFAULT 0,
    max_attempts     integer NOT NULL,
    retry            text NOT NULL DEFAULT '',
    max_delay        integer NOT NULL DEFAULT 0,
    max_duration     integer NOT NULL DEFAULT 0,
    idempotency_key  text,
    fingerprint      text NOT NULL DEFAULT '',
    actor            text NOT NULL DEFAULT '',
    run_at           integer NOT NULL,
    created_at       integer NOT NULL,
    first_started_at integer NOT NULL DEFAULT 0,
    finished_at      integer NOT NULL DEFAULT 0,
    deadline_at      integer,
    result           blob,
    last_error       text NOT NULL DEFAULT '',
    worker_id        text NOT NULL DEFAULT '',
    token            integer NOT NULL DEFAULT 0,
    lease_expires_at integer NOT NULL DEFAULT 0
);
-- The claim walks this index in claim order.
CREATE INDEX jobs_claim ON {s}jobs (queue, priority, run_at, id) WHERE state IN ('queued', 'sleeping');
CREATE UNIQUE INDEX jobs_idempotency ON {s}jobs (queue, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_lease ON {s}jobs (lease_expires_at) WHERE state = 'running';
-- Rescue finds jobs past a cancellation deadline here; the claim finds the
-- due ones of its queue in the second. Jobs without a deadline are in neither.
CREATE INDEX jobs_deadline ON {s}jobs (deadline_at) WHERE deadline_at IS NOT NULL AND state IN ('queued', 'running', 'sleeping');
CREATE INDEX jobs_claim_deadline ON {s}jobs (queue, deadline_at) WHERE deadline_at IS NOT NULL AND state IN ('queued', 'sleeping');
CREATE INDEX jobs_finished ON {s}jobs (finished_at, id) WHERE state IN ('succeeded', 'failed', 'cancelled');
CREATE INDEX jobs_task ON {s}jobs (task, state);
CREATE INDEX jobs_task_created ON {s}jobs (task, created_at);
CREATE INDEX jobs_queue_state ON {s}jobs (queue, state);

CREATE TABLE {s}runs (
    id          text PRIMARY KEY,
    job_id      text NOT NULL,
    attempt     integer NOT NULL,
    worker_id   text NOT NULL,
    token       integer NOT NULL,
    status      text NOT NULL,
    started_at  integer NOT NULL,
    finished_at integer NOT NULL DEFAULT 0,
    error       text NOT NULL DEFAULT ''
);
CREATE INDEX runs_job ON {s}runs (job_id, token);

CREATE TABLE {s}checkpoints (
    job_id     text NOT NULL,
    step       text NOT NULL,
    value      blob,
    created_at integer NOT NULL,
    PRIMARY KEY (job_id, step)
);

CREATE TABLE {s}task_configs (
    task                   text PRIMARY KEY,
    max_in_flight          integer NOT NULL DEFAULT 0,
    max_enqueue_per_second integer NOT NULL DEFAULT 0,
    queue                  text NOT NULL DEFAULT '',
    priority               integer NOT NULL DEFAULT 0,
    max_attempts           integer NOT NULL DEFAULT 0,
    retry                  text NOT NULL DEFAULT ''
);

CREATE TABLE {s}queue_configs (
    queue         text PRIMARY KEY,
    paused        integer NOT NULL DEFAULT 0,
    retention_ttl integer NOT NULL DEFAULT 0,
    cleanup_limit integer NOT NULL DEFAULT 0
);
