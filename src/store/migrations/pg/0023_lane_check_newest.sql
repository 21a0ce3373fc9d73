-- 0023_lane_check_newest (PostgreSQL): the idle-tenant lane's check of a
-- project's waiting runs ("fewer than 4 in flight and waiting") reads the
-- ready index from its newest end. From the oldest, beside a flood it
-- stepped over every entry of the runs the flood had already finished (their
-- queued versions are dead until vacuum reaches them): 28-35 index pages,
-- 1.0-1.3 ms, at each claim of the lane - the quiet tenant's claim was the
-- flood's backlog's cost. From the newest: 4 pages, 0.2-0.3 ms. Only the
-- count needs the check; the claim itself still takes the oldest first.
-- Otherwise as 0022.
CREATE OR REPLACE FUNCTION platform_run_claim(p_worker text, p_lease_ms integer, p_limit integer,
                                   p_idle boolean, p_hold text[])
RETURNS TABLE (project_id text, run_id uuid, prev_state text, mode text, workflow jsonb,
               input jsonb, attempts integer, max_attempts integer, timeout_s integer,
               trace_id text, claimed_at timestamptz, held boolean, resumed boolean)
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
              r.max_attempts, r.timeout_s, r.trace_id, r.updated_at, false, c.resumed)
  SELECT * FROM u
  UNION ALL
  SELECT r.project_id, r.run_id, r.state, r.mode, r.workflow, r.input, r.attempts,
         r.max_attempts, r.timeout_s, r.trace_id, clock_timestamp(), true, false
  FROM c JOIN runs r ON r.run_id = c.run_id WHERE c.held;
END $$;
