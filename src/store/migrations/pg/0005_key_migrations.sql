-- 0005_key_migrations (PostgreSQL): the phase of each (project, Redis key
-- pattern) in the INV-1 legacy-key migration: none -> A -> B -> C -> done.
CREATE TABLE key_migrations (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  pattern      TEXT NOT NULL,
  phase        TEXT NOT NULL CHECK (phase IN ('none','A','B','C','done')),
  phase_since  TIMESTAMPTZ NOT NULL,
  updated_by   TEXT NOT NULL,
  PRIMARY KEY (project_id, pattern)
);
ALTER TABLE key_migrations ENABLE ROW LEVEL SECURITY;
ALTER TABLE key_migrations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON key_migrations
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
