-- A run row is written once, when its attempt ends. The open attempt of a
-- running job lives in the job row itself (run_id, started_at), which the
-- claim rewrites anyway; ListRuns and TaskStats read it from there.
-- Runs are keyed by (job_id, token): each claim takes a new token, so it
-- names one attempt, and one index serves both uniqueness and ListRuns.
ALTER TABLE {s}jobs ADD COLUMN run_id text COLLATE "C" NOT NULL DEFAULT '',
    ADD COLUMN started_at bigint NOT NULL DEFAULT 0;
UPDATE {s}jobs j SET run_id = r.id, started_at = r.started_at
    FROM {s}runs r
    WHERE j.state = 'running' AND r.job_id = j.id AND r.token = j.token AND r.status = 'running';

CREATE TABLE {s}runs_v3 (
    job_id      text COLLATE "C" NOT NULL,
    token       bigint NOT NULL,
    id          text COLLATE "C" NOT NULL,
    attempt     integer NOT NULL,
    worker_id   text NOT NULL,
    status      text NOT NULL,
    started_at  bigint NOT NULL,
    finished_at bigint NOT NULL,
    error       text NOT NULL DEFAULT '',
    CONSTRAINT runs_v3_pkey PRIMARY KEY (job_id, token)
);
INSERT INTO {s}runs_v3 (job_id, token, id, attempt, worker_id, status, started_at, finished_at, error)
    SELECT job_id, token, id, attempt, worker_id, status, started_at, finished_at, error
    FROM {s}runs WHERE status <> 'running';
DROP TABLE {s}runs;
ALTER TABLE {s}runs_v3 RENAME TO runs;
ALTER INDEX {s}runs_v3_pkey RENAME TO runs_pkey;

-- The in-flight limit counts the active jobs of a task; finished jobs
-- leave this index, so a completion writes one index entry less.
-- TaskStats and CountJobs by task read through jobs_task_created.
DROP INDEX {s}jobs_task;
CREATE INDEX jobs_task_active ON {s}jobs (task) WHERE state IN ('queued', 'running', 'sleeping');

-- Reads of one queue (ListJobs pages by id, CountJobs) walk (queue, id).
-- Unlike (queue, state), it holds no column that a claim or a completion
-- changes, so SQLite leaves it alone on those updates.
DROP INDEX {s}jobs_queue_state;
CREATE INDEX jobs_queue ON {s}jobs (queue, id);
