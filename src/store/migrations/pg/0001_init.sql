-- 0001_init (PostgreSQL): the round-1 tables in schema awooop. Every tenant
-- table carries project_id and is under FORCE ROW LEVEL SECURITY (end of file).
CREATE TABLE projects (
  project_id   TEXT PRIMARY KEY,
  created_at   TIMESTAMPTZ NOT NULL,
  created_by   TEXT NOT NULL
);

CREATE TABLE api_keys (
  key_id       UUID PRIMARY KEY,
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  name         TEXT NOT NULL,
  scope        TEXT NOT NULL CHECK (scope IN ('platform-admin','project-admin','operator','worker','reader')),
  key_hash     TEXT NOT NULL UNIQUE,
  key_prefix   TEXT NOT NULL,
  created_at   TIMESTAMPTZ NOT NULL,
  created_by   TEXT NOT NULL,
  revoked_at   TIMESTAMPTZ
);
CREATE UNIQUE INDEX api_keys_active_name ON api_keys(project_id, name) WHERE revoked_at IS NULL;
CREATE INDEX api_keys_project ON api_keys(project_id, created_at);

CREATE TABLE contract_revisions (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  revision_id  UUID PRIMARY KEY,
  family       TEXT NOT NULL,
  contract_id  TEXT NOT NULL,
  state        TEXT NOT NULL CHECK (state IN ('draft','published','active','superseded','revoked')),
  body         JSONB NOT NULL,
  body_hash    TEXT NOT NULL,
  signature    TEXT,
  sign_key_id  TEXT,
  created_at   TIMESTAMPTZ NOT NULL,
  created_by   TEXT NOT NULL,
  published_at TIMESTAMPTZ,
  published_by TEXT,
  updated_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX contract_revisions_contract ON contract_revisions(project_id, family, contract_id);

CREATE TABLE active_revisions (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  family       TEXT NOT NULL,
  contract_id  TEXT NOT NULL,
  revision_id  UUID NOT NULL REFERENCES contract_revisions(revision_id),
  activated_at TIMESTAMPTZ NOT NULL,
  activated_by TEXT NOT NULL,
  PRIMARY KEY (project_id, family, contract_id)
);

CREATE TABLE contract_outbox (
  event_id        UUID PRIMARY KEY,
  event_type      TEXT NOT NULL,
  project_id      TEXT NOT NULL REFERENCES projects(project_id),
  contract_family TEXT NOT NULL,
  contract_id     TEXT NOT NULL,
  old_revision_id UUID,
  new_revision_id UUID NOT NULL,
  created_at      TIMESTAMPTZ NOT NULL,
  delivered_at    TIMESTAMPTZ,
  relay_attempts  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX contract_outbox_undelivered ON contract_outbox(created_at) WHERE delivered_at IS NULL;

CREATE TABLE contract_approvals (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  revision_id  UUID NOT NULL REFERENCES contract_revisions(revision_id),
  principal    TEXT NOT NULL,
  approved_at  TIMESTAMPTZ NOT NULL,
  expires_at   TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (revision_id, principal)
);

CREATE TABLE runs (
  project_id       TEXT NOT NULL REFERENCES projects(project_id),
  run_id           UUID PRIMARY KEY,
  state            TEXT NOT NULL,
  mode             TEXT NOT NULL CHECK (mode IN ('live','shadow')),
  workflow         JSONB NOT NULL,
  input            JSONB,
  priority         INTEGER NOT NULL DEFAULT 0,
  attempts         INTEGER NOT NULL DEFAULT 0,
  max_attempts     INTEGER NOT NULL DEFAULT 3,
  timeout_s        INTEGER NOT NULL DEFAULT 300,
  trace_id         TEXT NOT NULL,
  lease_owner      TEXT,
  lease_expires_at TIMESTAMPTZ,
  run_after        TIMESTAMPTZ NOT NULL,
  error_code       TEXT,
  created_at       TIMESTAMPTZ NOT NULL,
  updated_at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX runs_claim ON runs(state, run_after, priority);
CREATE INDEX runs_project ON runs(project_id, run_id);

CREATE TABLE run_steps (
  project_id       TEXT NOT NULL REFERENCES projects(project_id),
  run_id           UUID NOT NULL REFERENCES runs(run_id),
  step_no          INTEGER NOT NULL,
  kind             TEXT NOT NULL,
  state            TEXT NOT NULL,
  idempotency_key  TEXT NOT NULL,
  result           JSONB,
  started_at       TIMESTAMPTZ,
  finished_at      TIMESTAMPTZ,
  PRIMARY KEY (run_id, step_no)
);

CREATE TABLE idempotency_keys (
  project_id    TEXT NOT NULL REFERENCES projects(project_id),
  scope         TEXT NOT NULL,
  idem_key      TEXT NOT NULL,
  request_hash  TEXT NOT NULL,
  resource_id   TEXT NOT NULL,
  created_at    TIMESTAMPTZ NOT NULL,
  expires_at    TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (project_id, scope, idem_key)
);

CREATE TABLE audit_events (
  project_id  TEXT NOT NULL REFERENCES projects(project_id),
  event_id    UUID PRIMARY KEY,
  seq         BIGINT NOT NULL,
  ts          TIMESTAMPTZ NOT NULL,
  actor       TEXT NOT NULL,
  action      TEXT NOT NULL,
  target      TEXT,
  trace_id    TEXT,
  payload     JSONB NOT NULL,
  prev_hash   TEXT NOT NULL,
  hash        TEXT NOT NULL,
  UNIQUE (project_id, seq)
);

-- Row-level security: every tenant table, forced even for the owner. A
-- transaction sees and writes only rows of the project it SET LOCAL; without
-- one, current_setting() is NULL or empty and nothing matches (fail closed).
ALTER TABLE projects ENABLE ROW LEVEL SECURITY;
ALTER TABLE projects FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON projects
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON api_keys
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
ALTER TABLE contract_revisions ENABLE ROW LEVEL SECURITY;
ALTER TABLE contract_revisions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON contract_revisions
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
ALTER TABLE active_revisions ENABLE ROW LEVEL SECURITY;
ALTER TABLE active_revisions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON active_revisions
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
ALTER TABLE contract_outbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE contract_outbox FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON contract_outbox
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
ALTER TABLE contract_approvals ENABLE ROW LEVEL SECURITY;
ALTER TABLE contract_approvals FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON contract_approvals
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
ALTER TABLE runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE runs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON runs
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
ALTER TABLE run_steps ENABLE ROW LEVEL SECURITY;
ALTER TABLE run_steps FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON run_steps
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
ALTER TABLE idempotency_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE idempotency_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON idempotency_keys
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
ALTER TABLE audit_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON audit_events
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));

-- The one platform path across tenants: SECURITY DEFINER functions owned by the
-- NOLOGIN role awooop_platform, which alone has a read-only policy on the two
-- tables it needs. Each returns only what its caller may see.
GRANT USAGE ON SCHEMA awooop TO awooop_platform;
GRANT SELECT ON projects, api_keys TO awooop_platform;
CREATE POLICY platform_read ON projects FOR SELECT TO awooop_platform USING (true);
CREATE POLICY platform_read ON api_keys FOR SELECT TO awooop_platform USING (true);

-- Authenticates a bearer key by its SHA-256 before its project is known.
CREATE FUNCTION platform_lookup_key(p_hash text)
RETURNS TABLE (key_id uuid, project_id text, name text, scope text, revoked_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = awooop, pg_temp AS $$
  SELECT k.key_id, k.project_id, k.name, k.scope, k.revoked_at
  FROM api_keys k WHERE k.key_hash = p_hash
$$;

-- Lists projects for platform admins, keyset-paginated by id.
CREATE FUNCTION platform_list_projects(p_after text, p_limit integer)
RETURNS TABLE (project_id text, created_at timestamptz, created_by text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = awooop, pg_temp AS $$
  SELECT p.project_id, p.created_at, p.created_by FROM projects p
  WHERE p.project_id > coalesce(p_after, '')
  ORDER BY p.project_id LIMIT least(greatest(p_limit, 1), 1000)
$$;

ALTER FUNCTION platform_lookup_key(text) OWNER TO awooop_platform;
ALTER FUNCTION platform_list_projects(text, integer) OWNER TO awooop_platform;
REVOKE ALL ON FUNCTION platform_lookup_key(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION platform_list_projects(text, integer) FROM PUBLIC;
