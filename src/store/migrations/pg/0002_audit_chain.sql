-- 0002_audit_chain (PostgreSQL): the head of each project's audit hash chain,
-- and payloads kept as the exact text that was hashed (jsonb would reformat).
ALTER TABLE audit_events ALTER COLUMN payload TYPE text USING payload::text;
CREATE TABLE audit_heads (
  project_id  TEXT PRIMARY KEY REFERENCES projects(project_id),
  seq         BIGINT NOT NULL,
  hash        TEXT NOT NULL
);
ALTER TABLE audit_heads ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_heads FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON audit_heads
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
CREATE INDEX audit_events_action ON audit_events(project_id, action, seq);
