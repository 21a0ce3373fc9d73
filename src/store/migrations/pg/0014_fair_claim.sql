-- 0014_fair_claim (PostgreSQL): claims go round robin over projects (each
-- project's first runnable run, then each one's second, ...), by priority
-- and age within a project, so one tenant's backlog or priorities cannot
-- hold another's runs back, while a lone tenant still gets whole batches.
-- The per-project index serves one probe per project; the rows a probe locks
-- beyond the batch are released at the claim's commit.
CREATE INDEX runs_ready_project ON runs (project_id, priority DESC, run_id)
  WHERE state IN ('queued', 'retry_wait');
CREATE OR REPLACE FUNCTION platform_run_claim(p_worker text, p_lease_ms integer, p_limit integer)
RETURNS TABLE (project_id text, run_id uuid, prev_state text, mode text, workflow jsonb,
               input jsonb, attempts integer, max_attempts integer, timeout_s integer,
               trace_id text, claimed_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = awooop, pg_temp
SET plan_cache_mode = force_generic_plan SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
DECLARE
  lim integer := least(greatest(p_limit, 1), 1000);
  ids uuid[];
BEGIN
  ids := ARRAY(
    SELECT x.run_id FROM projects p CROSS JOIN LATERAL (
      SELECT y.run_id, y.priority, row_number() OVER (ORDER BY y.priority DESC, y.run_id) AS rn
      FROM (SELECT r.run_id, r.priority FROM runs r
            WHERE r.project_id = p.project_id AND r.state IN ('queued', 'retry_wait')
              AND r.run_after <= clock_timestamp()
            ORDER BY r.priority DESC, r.run_id LIMIT lim
            FOR UPDATE OF r SKIP LOCKED) y) x
    ORDER BY x.rn, x.priority DESC, x.run_id LIMIT lim);
  RETURN QUERY
  WITH c AS (SELECT r.run_id, r.state FROM runs r WHERE r.run_id = ANY (ids))
  UPDATE runs r SET state = 'claimed', lease_owner = p_worker,
         lease_expires_at = clock_timestamp() + make_interval(secs => p_lease_ms / 1000.0),
         attempts = r.attempts + 1, updated_at = clock_timestamp()
  FROM c WHERE r.run_id = c.run_id
  RETURNING r.project_id, r.run_id, c.state, r.mode, r.workflow, r.input, r.attempts,
            r.max_attempts, r.timeout_s, r.trace_id, r.updated_at;
END $$;
