-- 0006_runs (PostgreSQL): the run runtime. Workers are platform-wide, so like
-- the outbox relay they cross tenants only through SECURITY DEFINER functions
-- owned by awooop_platform: claim (SKIP LOCKED), heartbeat, and the list of
-- expired leases for the reaper. Everything else a worker does to a run
-- (start, journal, finish, re-queue) runs in a transaction of the run's own
-- project, under row-level security.
ALTER TABLE runs ADD COLUMN started_at TIMESTAMPTZ;
ALTER TABLE runs ADD COLUMN finished_at TIMESTAMPTZ;
ALTER TABLE run_steps ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;
ALTER TABLE run_steps ADD COLUMN error_code TEXT;
DROP INDEX runs_claim;
CREATE INDEX runs_ready ON runs (priority DESC, run_id)
  WHERE state IN ('queued', 'retry_wait');
CREATE INDEX runs_leased ON runs (lease_expires_at) WHERE state IN ('claimed', 'running');
-- a run's transitions are its audit records (target = run id)
CREATE INDEX audit_events_target ON audit_events (project_id, target);

GRANT SELECT, UPDATE ON runs TO awooop_platform;
CREATE POLICY platform_worker ON runs TO awooop_platform USING (true) WITH CHECK (true);

-- Claims up to p_limit runnable runs, highest priority then oldest first; the
-- previous state is returned for the audit record the worker writes next.
-- PL/pgSQL with a generic plan, so that each worker connection plans the
-- query once (planning cost more than running it); without knowing the LIMIT
-- a generic plan would merge-join the whole primary key, hence nested loops
-- only (one primary-key probe per claimed run).
CREATE FUNCTION platform_run_claim(p_worker text, p_lease_ms integer, p_limit integer)
RETURNS TABLE (project_id text, run_id uuid, prev_state text, mode text, workflow jsonb,
               input jsonb, attempts integer, max_attempts integer, timeout_s integer,
               trace_id text, claimed_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = awooop, pg_temp
SET plan_cache_mode = force_generic_plan SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
BEGIN
  RETURN QUERY
  WITH c AS (
    SELECT r.run_id, r.state FROM runs r
    WHERE r.state IN ('queued', 'retry_wait') AND r.run_after <= clock_timestamp()
    ORDER BY r.priority DESC, r.run_id
    LIMIT least(greatest(p_limit, 1), 1000)
    FOR UPDATE SKIP LOCKED)
  UPDATE runs r SET state = 'claimed', lease_owner = p_worker,
         lease_expires_at = clock_timestamp() + make_interval(secs => p_lease_ms / 1000.0),
         attempts = r.attempts + 1, updated_at = clock_timestamp()
  FROM c WHERE r.run_id = c.run_id
  RETURNING r.project_id, r.run_id, c.state, r.mode, r.workflow, r.input, r.attempts,
            r.max_attempts, r.timeout_s, r.trace_id, r.updated_at;
END $$;

-- Renews the leases p_worker still holds among p_runs (a JSON array of ids)
-- and returns the ones it no longer holds (cancelled, reaped, finished
-- elsewhere), so the worker stops them within one heartbeat.
CREATE FUNCTION platform_run_heartbeat(p_worker text, p_lease_ms integer, p_runs text)
RETURNS TABLE (run_id uuid, state text)
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = awooop, pg_temp AS $$
  WITH ids AS (SELECT (jsonb_array_elements_text(p_runs::jsonb))::uuid AS id),
  u AS (UPDATE runs r
        SET lease_expires_at = clock_timestamp() + make_interval(secs => p_lease_ms / 1000.0)
        WHERE r.run_id = ANY (ARRAY(SELECT id FROM ids)) AND r.lease_owner = p_worker
          AND r.state IN ('claimed', 'running')
        RETURNING r.run_id)
  SELECT ids.id, coalesce((SELECT r.state FROM runs r WHERE r.run_id = ids.id), 'missing')
  FROM ids WHERE ids.id <> ALL (ARRAY(SELECT u.run_id FROM u))
$$;

-- Runs whose lease expired (their worker died or hung), for the reaper, which
-- re-queues each in a transaction of its project.
CREATE FUNCTION platform_run_expired(p_limit integer)
RETURNS TABLE (project_id text, run_id uuid, state text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = awooop, pg_temp AS $$
  SELECT r.project_id, r.run_id, r.state FROM runs r
  WHERE r.state IN ('claimed', 'running') AND r.lease_expires_at < clock_timestamp()
  ORDER BY r.lease_expires_at LIMIT least(greatest(p_limit, 1), 1000)
$$;

ALTER FUNCTION platform_run_claim(text, integer, integer) OWNER TO awooop_platform;
ALTER FUNCTION platform_run_heartbeat(text, integer, text) OWNER TO awooop_platform;
ALTER FUNCTION platform_run_expired(integer) OWNER TO awooop_platform;
REVOKE ALL ON FUNCTION platform_run_claim(text, integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION platform_run_heartbeat(text, integer, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION platform_run_expired(integer) FROM PUBLIC;

-- New runs wake idle workers in every process (delivered at commit).
CREATE FUNCTION runs_notify() RETURNS trigger
LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('awooop_runs', ''); RETURN NULL; END $$;
CREATE TRIGGER runs_notify AFTER INSERT ON runs
  FOR EACH STATEMENT EXECUTE FUNCTION runs_notify();
