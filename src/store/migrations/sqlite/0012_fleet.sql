-- 0012_fleet (SQLite): which process serves which revision. Every
-- process running a policy cache (serve roles, `awooop watch`) writes one
-- fleet_serving row per contract it serves, at once when an activation
-- reaches it and again every report_ms as a heartbeat; a row whose
-- reported_at is older than three report intervals is a process gone.
-- fleet_learned keeps when each process learned each revision, so the
-- convergence of past activations stays measurable (commit -> learned).
-- contract_activations is the history of activations (the outbox rows are
-- pruned once delivered): written in the activation's transaction, with the
-- outbox event's time, the last moment before the commit.
CREATE TABLE fleet_serving (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  family       TEXT NOT NULL,
  contract_id  TEXT NOT NULL,
  process_id   TEXT NOT NULL,
  role         TEXT NOT NULL,
  version      TEXT NOT NULL,
  started_at   TEXT NOT NULL,
  revision_id  TEXT NOT NULL,
  learned_at   TEXT NOT NULL,
  reported_at  TEXT NOT NULL,
  report_ms    INTEGER NOT NULL,
  PRIMARY KEY (project_id, family, contract_id, process_id)
);
CREATE TABLE fleet_learned (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  family       TEXT NOT NULL,
  contract_id  TEXT NOT NULL,
  revision_id  TEXT NOT NULL,
  process_id   TEXT NOT NULL,
  learned_at   TEXT NOT NULL,
  PRIMARY KEY (project_id, family, contract_id, revision_id, process_id)
);
CREATE TABLE contract_activations (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  family       TEXT NOT NULL,
  contract_id  TEXT NOT NULL,
  revision_id  TEXT NOT NULL,
  previous_revision_id TEXT,
  activated_at TEXT NOT NULL,
  activated_by TEXT NOT NULL,
  PRIMARY KEY (project_id, family, contract_id, activated_at, revision_id)
);
CREATE INDEX fleet_learned_age ON fleet_learned (project_id, learned_at);
