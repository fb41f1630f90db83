-- boson_enqueue notifies each queue with the lowest priority and the
-- earliest and latest run_at of the jobs it stored there, as
-- "queue priority earliest latest" instead of the bare queue name, so that
-- the claim cursors of other processes do not pass the new jobs (see the
-- README). CREATE OR REPLACE keeps the function's identity: enqueues that
-- run while the migration commits use the old body or the new one, and
-- none fails. Everything else is as in migration 4.
CREATE OR REPLACE FUNCTION {s}boson_enqueue(
    p_now bigint, p_id text[], p_queue text[], p_task text[], p_payload bytea[], p_headers text[],
    p_priority integer[], p_max_attempts integer[], p_retry text[], p_max_delay bigint[],
    p_max_duration bigint[], p_key text[], p_fingerprint text[], p_actor text[], p_run_at bigint[],
    p_channel text)
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

    WITH ins AS (
        INSERT INTO {s}jobs AS j (id, queue, task, payload, headers, priority, max_attempts, retry,
            max_delay, max_duration, idempotency_key, fingerprint, actor, run_at, created_at, deadline_at, state)
        SELECT u.id, u.queue, u.task, u.payload, u.headers, u.priority, u.max_attempts, u.retry,
            u.max_delay, u.max_duration, u.key, u.fingerprint, u.actor, greatest(u.run_at, v_now), v_now,
            CASE WHEN u.max_delay > 0 THEN v_now + (u.max_delay + 999) / 1000 END, 'queued'
        FROM unnest(p_id, p_queue, p_task, p_payload, p_headers, p_priority, p_max_attempts, p_retry,
            p_max_delay, p_max_duration, p_key, p_fingerprint, p_actor, p_run_at)
            AS u(id, queue, task, payload, headers, priority, max_attempts, retry,
                max_delay, max_duration, key, fingerprint, actor, run_at)
        ON CONFLICT DO NOTHING
        RETURNING j.id, j.task, j.queue, j.priority, j.run_at)
    SELECT coalesce(array_agg(ins.id), '{}'), coalesce(array_agg(ins.task), '{}'), coalesce(array_agg(ins.queue), '{}'),
        coalesce(array_agg(ins.priority), '{}'), coalesce(array_agg(ins.run_at), '{}')
    INTO v_ids, v_added_tasks, v_queues, v_priorities, v_run_ats
    FROM ins;

    -- "queue lowest-priority earliest-run_at latest-run_at": listeners
    -- keep their claim cursors from passing the new jobs.
    PERFORM pg_notify(p_channel, n.queue || ' ' || min(n.priority) || ' ' || min(n.run_at) || ' ' || max(n.run_at))
        FROM unnest(v_queues, v_priorities, v_run_ats) AS n(queue, priority, run_at) GROUP BY n.queue;

    -- The caller knows the rows it sent: it needs the clock and the
    -- positions that reused a stored job, nothing else.
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
            SELECT * INTO v_job FROM {s}jobs AS h WHERE h.queue = v_miss.queue AND h.idempotency_key = v_miss.key;
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
