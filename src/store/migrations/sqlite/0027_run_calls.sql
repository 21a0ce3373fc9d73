-- 0027_run_calls (SQLite): the sub-steps of an agent step (see the
-- PostgreSQL migration), and approval decisions per parked call (sub_no).
CREATE TABLE run_calls (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  run_id       TEXT NOT NULL,
  step_no      INTEGER NOT NULL,
  seq          INTEGER NOT NULL,
  kind         TEXT NOT NULL CHECK (kind IN ('model', 'tool')),
  name         TEXT NOT NULL,
  state        TEXT NOT NULL CHECK (state IN ('started', 'done', 'parked', 'approved', 'failed')),
  result       TEXT,
  error_code   TEXT,
  created_at   TEXT NOT NULL,
  finished_at  TEXT,
  PRIMARY KEY (project_id, run_id, step_no, seq)
);
CREATE TABLE run_approvals_new (
  project_id  TEXT NOT NULL REFERENCES projects(project_id),
  run_id      TEXT NOT NULL,
  step_no     INTEGER NOT NULL,
  sub_no      INTEGER NOT NULL DEFAULT 0,
  principal   TEXT NOT NULL,
  decision    TEXT NOT NULL CHECK (decision IN ('approve','deny')),
  jti         TEXT,
  via         TEXT NOT NULL,
  decided_at  TEXT NOT NULL,
  PRIMARY KEY (project_id, run_id, step_no, sub_no, principal)
);
INSERT INTO run_approvals_new (project_id, run_id, step_no, sub_no, principal, decision, jti,
  via, decided_at)
  SELECT project_id, run_id, step_no, 0, principal, decision, jti, via, decided_at
  FROM run_approvals;
DROP TABLE run_approvals;
ALTER TABLE run_approvals_new RENAME TO run_approvals;
CREATE UNIQUE INDEX run_approvals_jti ON run_approvals (project_id, jti) WHERE jti IS NOT NULL;
