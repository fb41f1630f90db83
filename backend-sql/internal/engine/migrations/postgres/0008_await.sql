-- Fan-in (core.Awaiter). A waiting job keeps its wait's counters on its
-- own row (wait_token: the lease token of the run that began the wait, 0
-- for none; wait_total, wait_pending, wait_any, wait_woken, wait_cc) and
-- the request in job_waits; an awaited job lists its waits in awaited_by,
-- one "token:waiter id" entry each. A transition of an awaited job
-- updates its waiters' rows in the same statement or transaction, which
-- Postgres re-reads at their latest version once it holds their locks,
-- so no count is lost to a wait that began while the statement ran.
-- Online: new columns with constant defaults (no rewrite) and a new
-- table, which earlier builds never name. The lock on jobs is the first
-- and only lock on an existing table, so no statement of a running
-- worker deadlocks with it.
LOCK TABLE {s}jobs IN ACCESS EXCLUSIVE MODE;
ALTER TABLE {s}jobs ADD COLUMN awaited_by text[],
    ADD COLUMN wait_token bigint NOT NULL DEFAULT 0,
    ADD COLUMN wait_total integer NOT NULL DEFAULT 0,
    ADD COLUMN wait_pending integer NOT NULL DEFAULT 0,
    ADD COLUMN wait_any integer NOT NULL DEFAULT 0,
    ADD COLUMN wait_woken integer NOT NULL DEFAULT 0,
    ADD COLUMN wait_cc integer NOT NULL DEFAULT 0;

-- The latest wait of each job: the awaited ids in request order (a JSON
-- array), the mode, the bound (0 for none) and the token.
CREATE TABLE {s}job_waits (
    job_id          text COLLATE "C" PRIMARY KEY,
    token           bigint NOT NULL,
    mode            text NOT NULL,
    until_at        bigint NOT NULL DEFAULT 0,
    cancel_children integer NOT NULL DEFAULT 0,
    job_ids         text NOT NULL
);
