-- Indexes of a queue's activity over the last hour (the admin's chart):
-- its jobs by finish time and by creation time, and the failed and lost
-- runs by start time, so that each of the chart's counts reads only the
-- hour's entries, never every retained job. jobs_queue_finished holds the
-- state, so that a count by state reads the index alone; runs_failed
-- holds only failures, so that a completion writes nothing to it. SQLite
-- has one writer: the migration's transaction holds it while it builds
-- them, and earlier builds never name them.
CREATE INDEX jobs_queue_finished ON {s}jobs (queue, finished_at, state) WHERE state IN ('succeeded', 'failed', 'cancelled');
CREATE INDEX jobs_queue_created ON {s}jobs (queue, created_at);
CREATE INDEX runs_failed ON {s}runs (started_at) WHERE status IN ('failed', 'lost');
