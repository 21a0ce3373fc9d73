-- 0021_budget_overshoot (SQLite): the "overshoot" ledger line kind (see the
-- PostgreSQL migration). SQLite cannot change a CHECK constraint in place:
-- the ledger is copied into a table with the new one (sequence numbers kept,
-- AUTOINCREMENT continues from the highest).
CREATE TABLE budget_ledger_new (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT,
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  period_key   TEXT NOT NULL,
  call_id      TEXT NOT NULL,
  run_id       TEXT NOT NULL DEFAULT '',
  kind         TEXT NOT NULL CHECK (kind IN ('reserve','settle','release','reap','overshoot')),
  tokens       INTEGER NOT NULL,
  at           TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  cost         INTEGER NOT NULL DEFAULT 0,
  model        TEXT NOT NULL DEFAULT ''
);
INSERT INTO budget_ledger_new (seq, project_id, period_key, call_id, run_id, kind, tokens, at,
  cost, model)
  SELECT seq, project_id, period_key, call_id, run_id, kind, tokens, at, cost, model
  FROM budget_ledger;
DROP TABLE budget_ledger;
ALTER TABLE budget_ledger_new RENAME TO budget_ledger;
CREATE INDEX budget_ledger_project ON budget_ledger (project_id, period_key, seq);
