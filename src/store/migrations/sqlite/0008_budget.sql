-- 0008_budget (SQLite): the token budget ledger (see the PostgreSQL
-- migration for the design). A reservation is one conditional UPDATE inside
-- a write transaction (BEGIN IMMEDIATE serialises writers).
CREATE TABLE budget_periods (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  period_key   TEXT NOT NULL,
  token_limit  INTEGER NOT NULL CHECK (token_limit >= 0),
  reserved     INTEGER NOT NULL DEFAULT 0 CHECK (reserved >= 0),
  settled      INTEGER NOT NULL DEFAULT 0 CHECK (settled >= 0),
  PRIMARY KEY (project_id, period_key)
);
CREATE TABLE budget_reservations (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  call_id      TEXT NOT NULL,
  period_key   TEXT NOT NULL,
  run_id       TEXT NOT NULL DEFAULT '',
  tokens       INTEGER NOT NULL CHECK (tokens >= 0),
  holder       TEXT NOT NULL,
  lease_until  TEXT NOT NULL,
  PRIMARY KEY (project_id, call_id)
);
CREATE INDEX budget_reservations_lease ON budget_reservations (lease_until);
CREATE TABLE budget_ledger (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT,
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  period_key   TEXT NOT NULL,
  call_id      TEXT NOT NULL,
  run_id       TEXT NOT NULL DEFAULT '',
  kind         TEXT NOT NULL CHECK (kind IN ('reserve','settle','release','reap')),
  tokens       INTEGER NOT NULL,
  at           TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE INDEX budget_ledger_project ON budget_ledger (project_id, period_key, seq);
CREATE TABLE budget_state (
  project_id   TEXT PRIMARY KEY REFERENCES projects(project_id),
  suspended    INTEGER NOT NULL,
  reason       TEXT NOT NULL,
  since        TEXT NOT NULL,
  by_principal TEXT NOT NULL
);
