-- 0010_approvals (SQLite): the decisions on runs parked in waiting_approval
-- (see the PostgreSQL migration); the write transaction serialises deciders.
CREATE TABLE run_approvals (
  project_id  TEXT NOT NULL REFERENCES projects(project_id),
  run_id      TEXT NOT NULL,
  step_no     INTEGER NOT NULL,
  principal   TEXT NOT NULL,
  decision    TEXT NOT NULL CHECK (decision IN ('approve','deny')),
  jti         TEXT,
  via         TEXT NOT NULL,
  decided_at  TEXT NOT NULL,
  PRIMARY KEY (project_id, run_id, step_no, principal)
);
CREATE UNIQUE INDEX run_approvals_jti ON run_approvals (project_id, jti) WHERE jti IS NOT NULL;
CREATE INDEX runs_waiting ON runs (run_id) WHERE state = 'waiting_approval';
