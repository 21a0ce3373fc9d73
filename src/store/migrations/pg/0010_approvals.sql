-- 0010_approvals (PostgreSQL): the decisions on runs parked in
-- waiting_approval. One row per approver and parked step (an approver decides
-- once), and a token's jti at most once per project: a replayed approval
-- token finds its row. Written under the run's row lock, so the decision that
-- reaches the threshold is the one that moves the run.
CREATE TABLE run_approvals (
  project_id  TEXT NOT NULL REFERENCES projects(project_id),
  run_id      UUID NOT NULL,
  step_no     INTEGER NOT NULL,
  principal   TEXT NOT NULL,
  decision    TEXT NOT NULL CHECK (decision IN ('approve','deny')),
  jti         TEXT,
  via         TEXT NOT NULL,
  decided_at  TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (project_id, run_id, step_no, principal)
);
CREATE UNIQUE INDEX run_approvals_jti ON run_approvals (project_id, jti) WHERE jti IS NOT NULL;
ALTER TABLE run_approvals ENABLE ROW LEVEL SECURITY;
ALTER TABLE run_approvals FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON run_approvals
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));

-- The reaper ends runs whose approval window closed: it finds them across
-- tenants through this function (the journal's waiting step holds the
-- window's end), then fails each in a transaction of its project.
CREATE INDEX runs_waiting ON runs (run_id) WHERE state = 'waiting_approval';
GRANT SELECT ON run_steps TO awooop_platform;
CREATE POLICY platform_read ON run_steps FOR SELECT TO awooop_platform USING (true);
CREATE FUNCTION platform_run_approval_expired(p_limit integer)
RETURNS TABLE (project_id text, run_id uuid, state text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = awooop, pg_temp AS $$
  SELECT r.project_id, r.run_id, r.state FROM runs r
  JOIN run_steps s ON s.project_id = r.project_id AND s.run_id = r.run_id
   AND s.state = 'waiting'
  WHERE r.state = 'waiting_approval'
    AND (s.result->>'expires_at')::timestamptz < clock_timestamp()
  LIMIT least(greatest(p_limit, 1), 1000)
$$;
ALTER FUNCTION platform_run_approval_expired(integer) OWNER TO awooop_platform;
REVOKE ALL ON FUNCTION platform_run_approval_expired(integer) FROM PUBLIC;
