-- Fan-in (core.Awaiter). A waiting job keeps its wait's counters on its
-- own row (wait_token: the lease token of the run that began the wait, 0
-- for none; wait_total, wait_pending, wait_any, wait_woken, wait_cc) and
-- the request in job_waits; an awaited job lists its waits in awaited_by,
-- a JSON array of "token:waiter id" entries. Earlier builds never name
-- the new columns or the table, so they keep working.
ALTER TABLE {s}jobs ADD COLUMN awaited_by text;
ALTER TABLE {s}jobs ADD COLUMN wait_token integer NOT NULL DEFAULT 0;
ALTER TABLE {s}jobs ADD COLUMN wait_total integer NOT NULL DEFAULT 0;
ALTER TABLE {s}jobs ADD COLUMN wait_pending integer NOT NULL DEFAULT 0;
ALTER TABLE {s}jobs ADD COLUMN wait_any integer NOT NULL DEFAULT 0;
ALTER TABLE {s}jobs ADD COLUMN wait_woken integer NOT NULL DEFAULT 0;
ALTER TABLE {s}jobs ADD COLUMN wait_cc integer NOT NULL DEFAULT 0;

-- The latest wait of each job: the awaited ids in request order (a JSON
-- array), the mode, the bound (0 for none) and the token.
CREATE TABLE {s}job_waits (
    job_id          text NOT NULL PRIMARY KEY,
    token           integer NOT NULL,
    mode            text NOT NULL,
    until_at        integer NOT NULL DEFAULT 0,
    cancel_children integer NOT NULL DEFAULT 0,
    job_ids         text NOT NULL
);
