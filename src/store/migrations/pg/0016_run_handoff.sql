-- 0016_run_handoff (PostgreSQL): a run handed straight to an idle worker
-- thread of the submitting process is inserted already claimed; only an
-- insert of runs that wait to be claimed wakes the workers of every process
-- (a NOTIFY also serializes commits: the hand-off skips it). And the idle-
-- tenant lane (p_idle) takes runs of projects with fewer than 4 runs claimed
-- or running, not only of those with none: a tenant that is not flooding
-- but whose runs overlap under load (each slower than its submission rate)
-- still counts as not flooding; a flooding tenant holds batches in flight.
CREATE OR REPLACE FUNCTION runs_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM new_runs WHERE state <> 'claimed') THEN
    PERFORM pg_notify('awooop_runs', '');
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER runs_notify ON runs;
CREATE TRIGGER runs_notify AFTER INSERT ON runs REFERENCING NEW TABLE AS new_runs
  FOR EACH STATEMENT EXECUTE FUNCTION runs_notify();

CREATE OR REPLACE FUNCTION platform_run_claim(p_worker text, p_lease_ms integer, p_limit integer,
                                   p_idle boolean)
RETURNS TABLE (project_id text, run_id uuid, prev_state text, mode text, workflow jsonb,
               input jsonb, attempts integer, max_attempts integer, timeout_s integer,
               trace_id text, claimed_at timestamptz)
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
                              AND i.state IN ('claimed', 'running') LIMIT 4) fl) < 4),
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
  WITH c AS (SELECT r.run_id, r.state FROM runs r WHERE r.run_id = ANY (ids))
  UPDATE runs r SET state = 'claimed', lease_owner = p_worker,
         lease_expires_at = clock_timestamp() + make_interval(secs => p_lease_ms / 1000.0),
         attempts = r.attempts + 1, updated_at = clock_timestamp()
  FROM c WHERE r.run_id = c.run_id
  RETURNING r.project_id, r.run_id, c.state, r.mode, r.workflow, r.input, r.attempts,
            r.max_attempts, r.timeout_s, r.trace_id, r.updated_at;
END $$;
