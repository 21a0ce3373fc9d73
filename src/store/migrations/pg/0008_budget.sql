-- 0008_budget (PostgreSQL): the token budget ledger. budget_periods holds one
-- row per (project, period) with its limit and the tokens reserved and
-- settled: a reservation is one conditional UPDATE (reserved + settled + n <=
-- limit), so concurrent callers in any number of processes never pass the
-- limit. budget_reservations are the open reservations with their lease;
-- budget_ledger is the append-only history (reserve, settle, release, reap);
-- budget_state says whether a project is suspended (line 3).
CREATE TABLE budget_periods (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  period_key   TEXT NOT NULL,
  token_limit  BIGINT NOT NULL CHECK (token_limit >= 0),
  reserved     BIGINT NOT NULL DEFAULT 0 CHECK (reserved >= 0),
  settled      BIGINT NOT NULL DEFAULT 0 CHECK (settled >= 0),
  PRIMARY KEY (project_id, period_key)
);
CREATE TABLE budget_reservations (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  call_id      TEXT NOT NULL,
  period_key   TEXT NOT NULL,
  run_id       TEXT NOT NULL DEFAULT '',
  tokens       BIGINT NOT NULL CHECK (tokens >= 0),
  holder       TEXT NOT NULL,
  lease_until  TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (project_id, call_id)
);
CREATE INDEX budget_reservations_lease ON budget_reservations (lease_until);
CREATE TABLE budget_ledger (
  seq          BIGSERIAL PRIMARY KEY,
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  period_key   TEXT NOT NULL,
  call_id      TEXT NOT NULL,
  run_id       TEXT NOT NULL DEFAULT '',
  kind         TEXT NOT NULL CHECK (kind IN ('reserve','settle','release','reap')),
  tokens       BIGINT NOT NULL,
  at           TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX budget_ledger_project ON budget_ledger (project_id, period_key, seq);
CREATE TABLE budget_state (
  project_id   TEXT PRIMARY KEY REFERENCES projects(project_id),
  suspended    BOOLEAN NOT NULL,
  reason       TEXT NOT NULL,
  since        TIMESTAMPTZ NOT NULL,
  by_principal TEXT NOT NULL
);
ALTER TABLE budget_periods ENABLE ROW LEVEL SECURITY;
ALTER TABLE budget_periods FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON budget_periods
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
ALTER TABLE budget_reservations ENABLE ROW LEVEL SECURITY;
ALTER TABLE budget_reservations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON budget_reservations
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
ALTER TABLE budget_ledger ENABLE ROW LEVEL SECURITY;
ALTER TABLE budget_ledger FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON budget_ledger
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
ALTER TABLE budget_state ENABLE ROW LEVEL SECURITY;
ALTER TABLE budget_state FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON budget_state
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
