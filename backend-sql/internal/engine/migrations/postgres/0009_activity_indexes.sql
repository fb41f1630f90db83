-- Indexes of a queue's counts and of its activity over the last hour (the
-- admin's queue page and chart): its jobs by state and finish time, its
-- jobs by creation time, and the failed and lost runs by start time. A
-- count of a queue's jobs by state, of those that finished in a minute or
-- of those created in an interval reads one index alone (once vacuum has
-- marked the pages visible), never the rows; runs_failed holds only
-- failures, so that a completion writes nothing to it. A job update that
-- changes its state writes every jobs index anyway (no update of state
-- is a heap-only one), so jobs_queue_state costs an entry per transition,
-- as jobs_queue does.
-- Online: readers keep reading while the indexes are built; writers wait
-- for it (none fails). Every statement that writes runs has locked rows
-- of jobs first, so jobs is locked first, in a mode that waits for them
-- to end, and runs only then: no worker deadlocks with the migration.
LOCK TABLE {s}jobs IN EXCLUSIVE MODE;
LOCK TABLE {s}runs IN SHARE MODE;
CREATE INDEX jobs_queue_state ON {s}jobs (queue, state, finished_at);
CREATE INDEX jobs_queue_created ON {s}jobs (queue, created_at);
CREATE INDEX runs_failed ON {s}runs (started_at) WHERE status IN ('failed', 'lost');
