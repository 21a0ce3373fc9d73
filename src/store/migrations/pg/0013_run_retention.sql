-- 0013_run_retention (PostgreSQL): finished runs are pruned after the
-- retention (serve --run-retention-h) with their journal, approvals and
-- conversation links, in batches by the workers' reaper through this
-- function (the only way the platform role deletes a tenant's run). The
-- audit records of the run stay: the chain is never cut. The budget ledger
-- stays too: it is the spend's accounting.
CREATE INDEX runs_finished ON runs (finished_at) WHERE finished_at IS NOT NULL;
GRANT DELETE ON runs, run_steps, run_approvals, conversation_runs TO awooop_platform;
GRANT SELECT ON run_approvals, conversation_runs TO awooop_platform;
CREATE POLICY platform_prune ON run_steps FOR DELETE TO awooop_platform USING (true);
CREATE POLICY platform_prune ON run_approvals FOR ALL TO awooop_platform USING (true);
CREATE POLICY platform_prune ON conversation_runs FOR ALL TO awooop_platform USING (true);
CREATE FUNCTION platform_runs_prune(p_before timestamptz, p_limit integer)
RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = awooop, pg_temp AS $$
  WITH d AS (SELECT r.run_id FROM runs r
             WHERE r.finished_at IS NOT NULL AND r.finished_at < p_before
               AND r.state IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'suggested')
             ORDER BY r.finished_at LIMIT least(greatest(p_limit, 1), 10000)
             FOR UPDATE SKIP LOCKED),
  s AS (DELETE FROM run_steps WHERE run_id IN (SELECT run_id FROM d)),
  a AS (DELETE FROM run_approvals WHERE run_id IN (SELECT run_id FROM d)),
  c AS (DELETE FROM conversation_runs WHERE run_id IN (SELECT run_id::text FROM d)),
  r AS (DELETE FROM runs WHERE run_id IN (SELECT run_id FROM d) RETURNING 1)
  SELECT count(*) FROM r
$$;
ALTER FUNCTION platform_runs_prune(timestamptz, integer) OWNER TO awooop_platform;
REVOKE ALL ON FUNCTION platform_runs_prune(timestamptz, integer) FROM PUBLIC;
