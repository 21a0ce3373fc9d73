-- 0015_run_queues (PostgreSQL): named queues with per-queue concurrency
-- limits per project. A run names its queue ("default" unless it says);
-- queues other than "default" are declared (PUT /v1/projects/{p}/queues/{q},
-- at most 100 a project), and any queue - "default" too - may carry a
-- concurrency limit: at most that many of its runs claimed or running at
-- once, across every worker process.
ALTER TABLE runs ADD COLUMN queue TEXT NOT NULL DEFAULT 'default';
CREATE TABLE run_queues (
  project_id  TEXT NOT NULL REFERENCES projects(project_id),
  name        TEXT NOT NULL,
  concurrency INTEGER CHECK (concurrency BETWEEN 1 AND 100000),
  updated_at  TIMESTAMPTZ NOT NULL,
  updated_by  TEXT NOT NULL,
  PRIMARY KEY (project_id, name)
);
ALTER TABLE run_queues ENABLE ROW LEVEL SECURITY;
ALTER TABLE run_queues FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON run_queues
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
GRANT SELECT ON run_queues TO awooop_platform;
CREATE POLICY platform_read ON run_queues FOR SELECT TO awooop_platform USING (true);
DROP INDEX runs_ready_project;
CREATE INDEX runs_ready_queue ON runs (project_id, queue, priority DESC, run_id)
  WHERE state IN ('queued', 'retry_wait');
CREATE INDEX runs_inflight_queue ON runs (project_id, queue)
  WHERE state IN ('claimed', 'running');

-- Claims: round robin over projects (each one's first runnable run, then
-- each one's second, ...), within a project round robin over its queues,
-- within a queue by priority and age. A queue with a limit gives at most
-- its free places; the claim that fills it holds a transaction-level
-- advisory lock on it (tried, never waited for: a queue another claim is
-- filling is passed over), and counts its runs in flight in a statement
-- after taking the lock, so two claims never both fill the same place.
-- p_idle: only projects with no run claimed or running (the workers' idle-
-- tenant lane: a tenant that is not flooding never waits behind a busy pool).
DROP FUNCTION platform_run_claim(text, integer, integer);
CREATE FUNCTION platform_run_claim(p_worker text, p_lease_ms integer, p_limit integer,
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
      SELECT * FROM q WHERE NOT p_idle OR NOT EXISTS (
        SELECT 1 FROM runs i WHERE i.project_id = q.project_id AND i.state IN ('claimed', 'running'))),
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
ALTER FUNCTION platform_run_claim(text, integer, integer, boolean) OWNER TO awooop_platform;
REVOKE ALL ON FUNCTION platform_run_claim(text, integer, integer, boolean) FROM PUBLIC;
