-- 0001_init (SQLite): the round-1 tables. Every tenant table carries project_id;
-- SQLite has no RLS, so every query in src/store/ filters on it.
CREATE TABLE projects (
  project_id   TEXT PRIMARY KEY,
  created_at   TEXT NOT NULL,
  created_by   TEXT NOT NULL
);

CREATE TABLE api_keys (
  key_id       TEXT PRIMARY KEY,
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  name         TEXT NOT NULL,
  scope        TEXT NOT NULL CHECK (scope IN ('platform-admin','project-admin','operator','worker','reader')),
  key_hash     TEXT NOT NULL UNIQUE,
  key_prefix   TEXT NOT NULL,
  created_at   TEXT NOT NULL,
  created_by   TEXT NOT NULL,
  revoked_at   TEXT
);
CREATE UNIQUE INDEX api_keys_active_name ON api_keys(project_id, name) WHERE revoked_at IS NULL;
CREATE INDEX api_keys_project ON api_keys(project_id, created_at);

CREATE TABLE contract_revisions (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  revision_id  TEXT PRIMARY KEY,
  family       TEXT NOT NULL,
  contract_id  TEXT NOT NULL,
  state        TEXT NOT NULL CHECK (state IN ('draft','published','active','superseded','revoked')),
  body         TEXT NOT NULL,
  body_hash    TEXT NOT NULL,
  signature    TEXT,
  sign_key_id  TEXT,
  created_at   TEXT NOT NULL,
  created_by   TEXT NOT NULL,
  published_at TEXT,
  published_by TEXT,
  updated_at   TEXT NOT NULL
);
CREATE INDEX contract_revisions_contract ON contract_revisions(project_id, family, contract_id);

CREATE TABLE active_revisions (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  family       TEXT NOT NULL,
  contract_id  TEXT NOT NULL,
  revision_id  TEXT NOT NULL REFERENCES contract_revisions(revision_id),
  activated_at TEXT NOT NULL,
  activated_by TEXT NOT NULL,
  PRIMARY KEY (project_id, family, contract_id)
);

CREATE TABLE contract_outbox (
  event_id        TEXT PRIMARY KEY,
  event_type      TEXT NOT NULL,
  project_id      TEXT NOT NULL REFERENCES projects(project_id),
  contract_family TEXT NOT NULL,
  contract_id     TEXT NOT NULL,
  old_revision_id TEXT,
  new_revision_id TEXT NOT NULL,
  created_at      TEXT NOT NULL,
  delivered_at    TEXT,
  relay_attempts  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX contract_outbox_undelivered ON contract_outbox(created_at) WHERE delivered_at IS NULL;

CREATE TABLE contract_approvals (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  revision_id  TEXT NOT NULL REFERENCES contract_revisions(revision_id),
  principal    TEXT NOT NULL,
  approved_at  TEXT NOT NULL,
  expires_at   TEXT NOT NULL,
  PRIMARY KEY (revision_id, principal)
);

CREATE TABLE runs (
  project_id       TEXT NOT NULL REFERENCES projects(project_id),
  run_id           TEXT PRIMARY KEY,
  state            TEXT NOT NULL,
  mode             TEXT NOT NULL CHECK (mode IN ('live','shadow')),
  workflow         TEXT NOT NULL,
  input            TEXT,
  priority         INTEGER NOT NULL DEFAULT 0,
  attempts         INTEGER NOT NULL DEFAULT 0,
  max_attempts     INTEGER NOT NULL DEFAULT 3,
  timeout_s        INTEGER NOT NULL DEFAULT 300,
  trace_id         TEXT NOT NULL,
  lease_owner      TEXT,
  lease_expires_at TEXT,
  run_after        TEXT NOT NULL,
  error_code       TEXT,
  created_at       TEXT NOT NULL,
  updated_at       TEXT NOT NULL
);
CREATE INDEX runs_claim ON runs(state, run_after, priority);
CREATE INDEX runs_project ON runs(project_id, run_id);

CREATE TABLE run_steps (
  project_id       TEXT NOT NULL REFERENCES projects(project_id),
  run_id           TEXT NOT NULL REFERENCES runs(run_id),
  step_no          INTEGER NOT NULL,
  kind             TEXT NOT NULL,
  state            TEXT NOT NULL,
  idempotency_key  TEXT NOT NULL,
  result           TEXT,
  started_at       TEXT,
  finished_at      TEXT,
  PRIMARY KEY (run_id, step_no)
);

CREATE TABLE idempotency_keys (
  project_id    TEXT NOT NULL REFERENCES projects(project_id),
  scope         TEXT NOT NULL,
  idem_key      TEXT NOT NULL,
  request_hash  TEXT NOT NULL,
  resource_id   TEXT NOT NULL,
  created_at    TEXT NOT NULL,
  expires_at    TEXT NOT NULL,
  PRIMARY KEY (project_id, scope, idem_key)
);

CREATE TABLE audit_events (
  project_id  TEXT NOT NULL REFERENCES projects(project_id),
  event_id    TEXT PRIMARY KEY,
  seq         INTEGER NOT NULL,
  ts          TEXT NOT NULL,
  actor       TEXT NOT NULL,
  action      TEXT NOT NULL,
  target      TEXT,
  trace_id    TEXT,
  payload     TEXT NOT NULL,
  prev_hash   TEXT NOT NULL,
  hash        TEXT NOT NULL,
  UNIQUE (project_id, seq)
);
