-- A run row is written once, when its attempt ends. The open attempt of a
-- running job lives in the job row itself (run_id, started_at), which the
-- claim rewrites anyway; ListRuns and TaskStats read it from there.
-- Runs are keyed by (job_id, token) in a WITHOUT ROWID table: each claim
-- takes a new token, so the key names one attempt, and one b-tree serves
-- both uniqueness and ListRuns.
ALTER TABLE {s}jobs ADD COLUMN run_id text NOT NULL DEFAULT '';
ALTER TABLE {s}jobs ADD COLUMN started_at integer NOT NULL DEFAULT 0;
UPDATE {s}jobs SET
    run_id = coalesce((SELECT r.id FROM {s}runs r WHERE r.job_id = {s}jobs.id AND r.token = {s}jobs.token AND r.status = 'running'), ''),
    started_at = coalesce((SELECT r.started_at FROM {s}runs r WHERE r.job_id = {s}jobs.id AND r.token = {s}jobs.token AND r.status = 'running'), 0)
    WHERE state = 'running';

CREATE TABLE {s}runs_v2 (
    job_id      text NOT NULL,
    token       integer NOT NULL,
    id          text NOT NULL,
    attempt     integer NOT NULL,
    worker_id   text NOT NULL,
    status      text NOT NULL,
    started_at  integer NOT NULL,
    finished_at integer NOT NULL,
    error       text NOT NULL DEFAULT '',
    PRIMARY KEY (job_id, token)
) WITHOUT ROWID;
INSERT INTO {s}runs_v2 (job_id, token, id, attempt, worker_id, status, started_at, finished_at, error)
    SELECT job_id, token, id, attempt, worker_id, status, started_at, finished_at, error
    FROM {s}runs WHERE status <> 'running';
DROP TABLE {s}runs;
ALTER TABLE {s}runs_v2 RENAME TO runs;

-- The in-flight limit counts the active jobs of a task. Active jobs have
-- finished_at = 0 (every end sets it, a retry clears it), and the claim
-- does not change finished_at, so the claim leaves this index alone and a
-- completion only removes the entry; a predicate on state would make
-- SQLite rewrite the entry on every claim.
DROP INDEX {s}jobs_task;
CREATE INDEX jobs_task_active ON {s}jobs (task) WHERE finished_at = 0;

-- Reads of one queue (ListJobs pages by id, CountJobs) walk (queue, id).
-- Unlike (queue, state), it holds no column that a claim or a completion
-- changes, so SQLite leaves it alone on those updates.
DROP INDEX {s}jobs_queue_state;
CREATE INDEX jobs_queue ON {s}jobs (queue, id);
