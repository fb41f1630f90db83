-- Keyed mode (see the README, "Flow control"): a task's per-key running
-- counts are kept only while a marker row ('m', task, '') says the task
-- is in keyed mode, and its own running count ('t', task, '') is kept
-- whenever it has a MaxRunning or a per-key limit. The previous release
-- kept every key row of a task with a per-key limit: those counts are
-- exact, so each task with key rows starts in keyed mode (it leaves it
-- when it runs nothing), and a task with a per-key limit but no
-- MaxRunning gets its task row, counted from the running jobs.
-- Online: the flow lock first (no flow claim or config change runs, and
-- every one of them takes it before flow_counts), then the lock a config
-- change takes on flow_counts, which waits for every transition that
-- wrote it to commit and holds back the later ones, so the count is
-- exact. Nothing else is locked.
SELECT pg_advisory_xact_lock(hashtext('boson.flow.{s}'));
LOCK TABLE {s}flow_counts IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO {s}flow_counts (scope, name, lkey, n)
SELECT 't', c.task, '', (SELECT count(*) FROM {s}jobs j WHERE j.task = c.task AND j.state = 'running')
FROM {s}task_configs c WHERE c.max_running_per_key > 0
ON CONFLICT (scope, name, lkey) DO NOTHING;
INSERT INTO {s}flow_counts (scope, name, lkey, n)
SELECT DISTINCT 'm', name, '', 0::bigint FROM {s}flow_counts WHERE scope = 'k';
