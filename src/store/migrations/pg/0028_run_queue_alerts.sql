-- 0028_run_queue_alerts (PostgreSQL): what the alerts on run queues and on
-- convergence read (deploy/prometheus/alerts.yml, issue 47).
--
-- A claim names each run's queue (queue_name): a worker counts the runs it
-- finishes per (project, queue) without asking the store again. Otherwise
-- the claim is 0023's; its result changes, so it is dropped and created.
DROP FUNCTION platform_run_claim(text, integer, integer, boolean, text[]);
CREATE FUNCTION platform_run_claim(p_worker text, p_lease_ms integer, p_limit integer,
                                   p_idle boolean, p_hold text[])
RETURNS TABLE (project_id text, run_id uuid, prev_state text, mode text, workflow jsonb,
               input jsonb, attempts integer, max_attempts integer, timeout_s integer,
               trace_id text, claimed_at timestamptz, held boolean, resumed boolean,
               queue_name text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = awooop, pg_temp
SET plan_cache_mode = force_generic_plan SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
DECLARE
  lim integer := least(greatest(p_limit, 1), 1000);
  mine text[];
  ids uuid[];
BEGIN
  mine := ARRAY(
    SELECT q.project_id || '/' || q.name FROM run_queues q
    WHERE q.concurrency IS NOT NULL
      AND pg_try_advisory_xact_lock(hashtextextended('awooop.run_queue/' || q.project_id
                                                     || '/' || q.name, 0)));
  ids := ARRAY(
    WITH q AS (
      SELECT p.project_id, 'default'::text AS name, d.concurrency FROM projects p
      LEFT JOIN run_queues d ON d.project_id = p.project_id AND d.name = 'default'
      UNION ALL
      SELECT rq.project_id, rq.name, rq.concurrency FROM run_queues rq WHERE rq.name <> 'default'),
    qi AS (
      SELECT * FROM q WHERE NOT p_idle OR (
        SELECT count(*) FROM (SELECT 1 FROM runs i WHERE i.project_id = q.project_id
                              AND i.state IN ('claimed', 'running') LIMIT 4) fl) + (
        SELECT count(*) FROM (SELECT 1 FROM runs i WHERE i.project_id = q.project_id
                              AND i.queue = q.name AND i.state IN ('queued', 'retry_wait')
                              ORDER BY i.priority, i.run_id DESC LIMIT 4) fq) < 4),
    f AS (
      SELECT q.project_id, q.name,
             CASE WHEN q.concurrency IS NULL THEN lim
                  WHEN (q.project_id || '/' || q.name) <> ALL (mine) THEN 0
                  ELSE greatest(0, least(lim, q.concurrency - (
                         SELECT count(*) FROM runs i WHERE i.project_id = q.project_id
                           AND i.queue = q.name AND i.state IN ('claimed', 'running')))::integer)
             END AS n
      FROM qi q)
    SELECT z.run_id FROM (
      SELECT y.run_id, y.priority,
             row_number() OVER (PARTITION BY y.project_id ORDER BY y.qn, y.priority DESC,
                                y.run_id) AS pn
      FROM f CROSS JOIN LATERAL (
        SELECT f.project_id, x.run_id, x.priority,
               row_number() OVER (ORDER BY x.priority DESC, x.run_id) AS qn
        FROM (SELECT r.run_id, r.priority FROM runs r
              WHERE r.project_id = f.project_id AND r.queue = f.name
                AND r.state IN ('queued', 'retry_wait') AND r.run_after <= clock_timestamp()
              ORDER BY r.priority DESC, r.run_id LIMIT f.n
              FOR UPDATE OF r SKIP LOCKED) x) y
      WHERE f.n > 0) z
    ORDER BY z.pn, z.priority DESC, z.run_id LIMIT lim);
  RETURN QUERY
  WITH c AS (
    SELECT r.run_id, r.state, r.started_at IS NOT NULL AS resumed,
           (r.state = 'queued' AND r.started_at IS NULL AND cardinality(p_hold) > 0
            AND jsonb_typeof(r.workflow) = 'array' AND jsonb_array_length(r.workflow) > 0
            AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(r.workflow) s
                            WHERE NOT coalesce(s ->> 'kind' = ANY (p_hold), false))) AS held
    FROM runs r WHERE r.run_id = ANY (ids)),
  u AS (
    UPDATE runs r SET state = 'claimed', lease_owner = p_worker,
           lease_expires_at = clock_timestamp() + make_interval(secs => p_lease_ms / 1000.0),
           attempts = r.attempts + 1, updated_at = clock_timestamp()
    FROM c WHERE r.run_id = c.run_id AND NOT c.held
    RETURNING r.project_id, r.run_id, c.state, r.mode, r.workflow, r.input, r.attempts,
              r.max_attempts, r.timeout_s, r.trace_id, r.updated_at, false, c.resumed,
              r.queue)
  SELECT * FROM u
  UNION ALL
  SELECT r.project_id, r.run_id, r.state, r.mode, r.workflow, r.input, r.attempts,
         r.max_attempts, r.timeout_s, r.trace_id, clock_timestamp(), true, false, r.queue
  FROM c JOIN runs r ON r.run_id = c.run_id WHERE c.held;
END $$;
ALTER FUNCTION platform_run_claim(text, integer, integer, boolean, text[]) OWNER TO awooop_platform;
REVOKE ALL ON FUNCTION platform_run_claim(text, integer, integer, boolean, text[]) FROM PUBLIC;

-- The age of each queue's oldest runnable run: per queue (each project's
-- "default" and every declared one) the smallest run_after of its runs
-- queued or in retry_wait, when it is due by p_now. runs_due_queue makes
-- that one index descent per queue, whatever the backlog: a worker asks
-- every --queue-age-ms (15 s), one statement for every project.
CREATE INDEX runs_due_queue ON runs (project_id, queue, run_after)
  WHERE state IN ('queued', 'retry_wait');
CREATE FUNCTION platform_run_queue_oldest(p_now timestamptz)
RETURNS TABLE (project_id text, queue text, due_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = awooop, pg_temp AS $$
  SELECT q.project_id, q.name, o.run_after FROM (
    SELECT p.project_id, 'default'::text AS name FROM projects p
    UNION ALL
    SELECT rq.project_id, rq.name FROM run_queues rq WHERE rq.name <> 'default') q
  CROSS JOIN LATERAL (
    SELECT r.run_after FROM runs r
    WHERE r.project_id = q.project_id AND r.queue = q.name
      AND r.state IN ('queued', 'retry_wait')
    ORDER BY r.run_after LIMIT 1) o
  WHERE o.run_after <= p_now
$$;
ALTER FUNCTION platform_run_queue_oldest(timestamptz) OWNER TO awooop_platform;
REVOKE ALL ON FUNCTION platform_run_queue_oldest(timestamptz) FROM PUBLIC;

-- The active pointers of the projects a process serves (a JSON array of
-- project ids), read by its fleet reporter in one statement to tell how far
-- behind the revisions it serves are. Ids and times only: no body.
GRANT SELECT ON active_revisions TO awooop_platform;
CREATE POLICY platform_read ON active_revisions FOR SELECT TO awooop_platform USING (true);
CREATE FUNCTION platform_active_revisions(p_projects text)
RETURNS TABLE (project_id text, family text, contract_id text, revision_id text,
               activated_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = awooop, pg_temp AS $$
  SELECT a.project_id, a.family, a.contract_id, a.revision_id::text, a.activated_at
  FROM active_revisions a
  WHERE a.project_id IN (SELECT jsonb_array_elements_text(p_projects::jsonb))
$$;
ALTER FUNCTION platform_active_revisions(text) OWNER TO awooop_platform;
REVOKE ALL ON FUNCTION platform_active_revisions(text) FROM PUBLIC;
