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
