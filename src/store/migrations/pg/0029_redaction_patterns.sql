-- 0029_redaction_patterns (PostgreSQL): a project's custom redaction
-- patterns, set by the platform only (platform-admin keys: PUT
-- /v1/projects/{p}/redaction-patterns, `awooop redaction set`), audited in the
-- project's chain. patterns is the list as JSON text ([{"name", "pattern"}],
-- validated and compiled before it is written). version grows by one at each
-- change and is never reset (clearing writes []), so a process recompiles a
-- project's list exactly when its version moved: each process polls
-- platform_redaction_versions() (one small read every few seconds).
CREATE TABLE redaction_patterns (
  project_id TEXT PRIMARY KEY REFERENCES projects(project_id),
  version    BIGINT NOT NULL CHECK (version > 0),
  patterns   TEXT NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL,
  updated_by TEXT NOT NULL
);
ALTER TABLE redaction_patterns ENABLE ROW LEVEL SECURITY;
ALTER TABLE redaction_patterns FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON redaction_patterns
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
GRANT SELECT ON redaction_patterns TO awooop_platform;
CREATE POLICY platform_read ON redaction_patterns FOR SELECT TO awooop_platform USING (true);

-- Every project's list version (a project without a row has none), for the
-- pollers; the lists themselves are read in each project's own transaction.
CREATE FUNCTION platform_redaction_versions()
RETURNS TABLE (project_id text, version bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = awooop, pg_temp AS $$
  SELECT r.project_id, r.version FROM redaction_patterns r ORDER BY r.project_id
$$;
ALTER FUNCTION platform_redaction_versions() OWNER TO awooop_platform;
REVOKE ALL ON FUNCTION platform_redaction_versions() FROM PUBLIC;
