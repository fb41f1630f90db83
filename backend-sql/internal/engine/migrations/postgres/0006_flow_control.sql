-- Flow control: the flow fields of a job, the gates that keep held-back
-- jobs out of the claim index, the running counts and start windows of
-- limited tasks, keys and queues, the sequences' wake-up marks, and
-- boson_enqueue2, which stores the flow fields. Online: new columns with
-- constant defaults (no rewrite), new tables, a new function; the claim
-- and idempotency indexes are rebuilt under their names with the new
-- predicates. The tables it alters stay locked until it commits, so the
-- previous release's statements wait for it (none fails); they are
-- locked first, in the order those statements take them (its enqueue
-- reads task_configs before it writes jobs, its claim writes jobs before
-- it reads queue_configs), so that none of them deadlocks with it.
LOCK TABLE {s}task_configs, {s}jobs, {s}queue_configs IN ACCESS EXCLUSIVE MODE;
ALTER TABLE {s}jobs ADD COLUMN unique_mode text NOT NULL DEFAULT '',
    ADD COLUMN unique_period bigint NOT NULL DEFAULT 0,
    ADD COLUMN key_expires_at bigint NOT NULL DEFAULT 0,
    ADD COLUMN key_released integer NOT NULL DEFAULT 0,
    ADD COLUMN limit_key text COLLATE "C",
    ADD COLUMN sequence_key text COLLATE "C",
    ADD COLUMN seq_gate integer NOT NULL DEFAULT 0,
    ADD COLUMN seq_hold integer NOT NULL DEFAULT 0,
    ADD COLUMN key_gate integer NOT NULL DEFAULT 0;
ALTER TABLE {s}task_configs ADD COLUMN max_running integer NOT NULL DEFAULT 0,
    ADD COLUMN max_running_per_key integer NOT NULL DEFAULT 0,
    ADD COLUMN max_starts_per_second integer NOT NULL DEFAULT 0,
    ADD COLUMN max_starts_per_second_per_key integer NOT NULL DEFAULT 0,
    ADD COLUMN hold_sequence_on_failure integer NOT NULL DEFAULT 0;
ALTER TABLE {s}queue_configs ADD COLUMN max_running integer NOT NULL DEFAULT 0;

-- A gated job (held back by its sequence or its saturated limit key) is
-- not in the claim index, so no claim walks it.
DROP INDEX {s}jobs_claim;
CREATE INDEX jobs_claim ON {s}jobs (queue, priority, run_at, id)
    WHERE state IN ('queued', 'sleeping') AND seq_gate = 0 AND key_gate = 0;
-- Only the job that holds a key is in the unique index: a while-active
-- job leaves it when it is terminal, a released by-period job at once.
DROP INDEX {s}jobs_idempotency;
CREATE UNIQUE INDEX jobs_idempotency ON {s}jobs (queue, idempotency_key)
    WHERE idempotency_key IS NOT NULL AND key_released = 0 AND (unique_mode <> 'while_active' OR state IN ('queued', 'running', 'sleeping'));
-- The head of a sequence, and whether any of its jobs is running or sleeping.
CREATE INDEX jobs_sequence ON {s}jobs (queue, sequence_key, id)
    WHERE sequence_key IS NOT NULL AND (state IN ('queued', 'running', 'sleeping') OR seq_hold <> 0);
CREATE INDEX jobs_sequence_busy ON {s}jobs (queue, sequence_key)
    WHERE sequence_key IS NOT NULL AND state IN ('running', 'sleeping');
-- The jobs a saturated limit key holds back, in claim order.
CREATE INDEX jobs_key_gate ON {s}jobs (task, limit_key, priority, run_at, id) WHERE key_gate <> 0;
CREATE INDEX jobs_limit_key ON {s}jobs (task, limit_key) WHERE limit_key IS NOT NULL;

-- Running counts ('t' task, 'q' queue, 'k' task and limit key), kept only
-- for what a stored config limits; ready counts the slots freed since a
-- claim last opened the key's gates.
CREATE TABLE {s}flow_counts (
    scope text COLLATE "C" NOT NULL,
    name  text COLLATE "C" NOT NULL,
    lkey  text COLLATE "C" NOT NULL,
    n     bigint NOT NULL DEFAULT 0,
    ready integer NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, name, lkey)
);
CREATE INDEX flow_counts_ready ON {s}flow_counts (scope) WHERE ready <> 0;
-- Claims per one-second window of the store's clock, for rate-limited
-- tasks ('' key) and keys.
CREATE TABLE {s}flow_starts (
    task text COLLATE "C" NOT NULL,
    lkey text COLLATE "C" NOT NULL,
    sec  bigint NOT NULL,
    n    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (task, lkey, sec)
);
-- A sequence whose head may have changed (ready counts the changes since
-- a claim last looked); the next claim of its queue opens the new head.
CREATE TABLE {s}flow_seqs (
    queue text COLLATE "C" NOT NULL,
    seq   text COLLATE "C" NOT NULL,
    ready integer NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, seq)
);
CREATE INDEX flow_seqs_ready ON {s}flow_seqs (queue) WHERE ready <> 0;
-- Whether any sequence or limit exists: until one does, claims take the
-- single-statement path that ignores flow control.
CREATE TABLE {s}flow_switch (
    id     integer PRIMARY KEY,
    seq    integer NOT NULL DEFAULT 0,
    limits integer NOT NULL DEFAULT 0
);
INSERT INTO {s}flow_switch (id) VALUES (1);

-- boson_enqueue2 is boson_enqueue (migration 5) with the flow fields:
-- it releases the by-period holders of the batch's keys whose window
-- ended, stores unique mode, period, limit and sequence keys, gates
-- every new job of a sequence and marks its sequence for the next claim,
-- and looks up only the job that holds a key.
CREATE FUNCTION {s}boson_enqueue2(
    p_now bigint, p_id text[], p_queue text[], p_task text[], p_payload bytea[], p_headers text[],
    p_priority integer[], p_max_attempts integer[], p_retry text[], p_max_delay bigint[],
    p_max_duration bigint[], p_key text[], p_fingerprint text[], p_actor text[], p_run_at bigint[],
    p_channel text, p_unique text[], p_period bigint[], p_limit_key text[], p_seq_key text[])
RETURNS TABLE (pos integer, reused boolean, now_us bigint, job {s}jobs)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    v_now bigint;
    v_tasks text[];
    v_in_flight integer[];
    v_per_second integer[];
    v_ids text[];
    v_added_tasks text[];
    v_queues text[];
    v_priorities integer[];
    v_run_ats bigint[];
    v_added bigint;
    v_count bigint;
    v_miss record;
    v_job {s}jobs;
BEGIN
    SELECT array_agg(c.task), array_agg(c.max_in_flight), array_agg(c.max_enqueue_per_second)
    INTO v_tasks, v_in_flight, v_per_second
    FROM (SELECT t.task, t.max_in_flight, t.max_enqueue_per_second FROM {s}task_configs t
        WHERE t.task = ANY (p_task) AND (t.max_in_flight > 0 OR t.max_enqueue_per_second > 0)
        ORDER BY t.task FOR UPDATE) AS c;

    v_now := coalesce(p_now, (extract(epoch from clock_timestamp()) * 1000000)::bigint);

    IF EXISTS (SELECT 1 FROM unnest(p_key) AS k WHERE k IS NOT NULL) THEN
        UPDATE {s}jobs AS h SET key_released = 1
        FROM unnest(p_queue, p_key) AS u(queue, key)
        WHERE u.key IS NOT NULL AND h.queue = u.queue AND h.idempotency_key = u.key
            AND h.key_released = 0 AND (h.unique_mode <> 'while_active' OR h.state IN ('queued', 'running', 'sleeping'))
            AND h.unique_mode = 'by_period' AND h.key_expires_at <= v_now;
    END IF;

    WITH ins AS (
        INSERT INTO {s}jobs AS j (id, queue, task, payload, headers, priority, max_attempts, retry,
            max_delay, max_duration, idempotency_key, fingerprint, actor, run_at, created_at, deadline_at, state,
            unique_mode, unique_period, key_expires_at, limit_key, sequence_key, seq_gate)
        SELECT u.id, u.queue, u.task, u.payload, u.headers, u.priority, u.max_attempts, u.retry,
            u.max_delay, u.max_duration, u.key, u.fingerprint, u.actor, greatest(u.run_at, v_now), v_now,
            CASE WHEN u.max_delay > 0 THEN v_now + (u.max_delay + 999) / 1000 END, 'queued',
            u.uniq, u.period,
            CASE WHEN u.uniq = 'by_period' AND u.period > 0 THEN ((v_now * 1000) / u.period + 1) * u.period / 1000 ELSE 0 END,
            u.lkey, u.skey, CASE WHEN u.skey IS NULL THEN 0 ELSE 1 END
        FROM unnest(p_id, p_queue, p_task, p_payload, p_headers, p_priority, p_max_attempts, p_retry,
            p_max_delay, p_max_duration, p_key, p_fingerprint, p_actor, p_run_at, p_unique, p_period, p_limit_key, p_seq_key)
            AS u(id, queue, task, payload, headers, priority, max_attempts, retry,
                max_delay, max_duration, key, fingerprint, actor, run_at, uniq, period, lkey, skey)
        ON CONFLICT DO NOTHING
        RETURNING j.id, j.task, j.queue, j.priority, j.run_at)
    SELECT coalesce(array_agg(ins.id), '{}'), coalesce(array_agg(ins.task), '{}'), coalesce(array_agg(ins.queue), '{}'),
        coalesce(array_agg(ins.priority), '{}'), coalesce(array_agg(ins.run_at), '{}')
    INTO v_ids, v_added_tasks, v_queues, v_priorities, v_run_ats
    FROM ins;

    IF EXISTS (SELECT 1 FROM unnest(p_seq_key) AS k WHERE k IS NOT NULL) THEN
        UPDATE {s}flow_switch SET seq = 1 WHERE id = 1 AND seq = 0;
        INSERT INTO {s}flow_seqs AS f (queue, seq, ready)
            SELECT DISTINCT u.queue, u.skey, 1 FROM unnest(p_id, p_queue, p_seq_key) AS u(id, queue, skey)
            WHERE u.skey IS NOT NULL AND u.id = ANY (v_ids)
            ORDER BY 1, 2
        ON CONFLICT (queue, seq) DO UPDATE SET ready = f.ready + 1;
    END IF;

    PERFORM pg_notify(p_channel, n.queue || ' ' || min(n.priority) || ' ' || min(n.run_at) || ' ' || max(n.run_at))
        FROM unnest(v_queues, v_priorities, v_run_ats) AS n(queue, priority, run_at) GROUP BY n.queue;

    pos := -1;
    reused := false;
    now_us := v_now;
    job := NULL;
    RETURN NEXT;

    IF cardinality(v_ids) < cardinality(p_id) THEN
        FOR v_miss IN SELECT (u.ord - 1)::integer AS pos, u.id, u.queue, u.key, u.fingerprint
            FROM unnest(p_id, p_queue, p_key, p_fingerprint) WITH ORDINALITY AS u(id, queue, key, fingerprint, ord)
            WHERE u.id NOT IN (SELECT unnest(v_ids)) ORDER BY u.ord
        LOOP
            IF v_miss.key IS NULL THEN
                RAISE EXCEPTION 'job % was not stored', v_miss.id USING ERRCODE = 'BQ003';
            END IF;
            SELECT * INTO v_job FROM {s}jobs AS h WHERE h.queue = v_miss.queue AND h.idempotency_key = v_miss.key
                AND h.key_released = 0 AND (h.unique_mode <> 'while_active' OR h.state IN ('queued', 'running', 'sleeping'));
            IF NOT FOUND THEN
                RAISE EXCEPTION 'idempotency key % of queue % is held by a job that vanished; try again',
                    to_json(v_miss.key), to_json(v_miss.queue) USING ERRCODE = 'BQ003';
            END IF;
            IF v_job.fingerprint <> v_miss.fingerprint THEN
                RAISE EXCEPTION 'key % of queue % is held by job % with another request',
                    to_json(v_miss.key), to_json(v_miss.queue), v_job.id
                    USING ERRCODE = 'BQ001', DETAIL = v_miss.pos::text;
            END IF;
            pos := v_miss.pos;
            reused := true;
            now_us := v_now;
            job := v_job;
            RETURN NEXT;
        END LOOP;
    END IF;

    FOR i IN 1 .. coalesce(cardinality(v_tasks), 0) LOOP
        SELECT count(*) INTO v_added FROM unnest(v_added_tasks) AS t WHERE t = v_tasks[i];
        CONTINUE WHEN v_added = 0;
        IF v_in_flight[i] > 0 THEN
            SELECT count(*) INTO v_count FROM {s}jobs AS a
                WHERE a.task = v_tasks[i] AND a.state IN ('queued', 'running', 'sleeping');
            IF v_count > v_in_flight[i] THEN
                RAISE EXCEPTION 'task % would have % jobs in flight, its limit is %',
                    to_json(v_tasks[i]), v_count, v_in_flight[i] USING ERRCODE = 'BQ002';
            END IF;
        END IF;
        IF v_per_second[i] > 0 THEN
            SELECT count(*) INTO v_count FROM {s}jobs AS a
                WHERE a.task = v_tasks[i] AND a.created_at > v_now - 1000000 AND a.created_at <= v_now;
            IF v_count > v_per_second[i] THEN
                RAISE EXCEPTION 'task % would have % jobs enqueued within a second, its limit is %',
                    to_json(v_tasks[i]), v_count, v_per_second[i] USING ERRCODE = 'BQ002';
            END IF;
        END IF;
    END LOOP;
END
$fn$;
