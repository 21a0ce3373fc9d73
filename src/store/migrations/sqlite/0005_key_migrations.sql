-- 0005_key_migrations (SQLite): the phase of each (project, Redis key pattern)
-- in the INV-1 legacy-key migration: none -> A -> B -> C -> done.
CREATE TABLE key_migrations (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  pattern      TEXT NOT NULL,
  phase        TEXT NOT NULL CHECK (phase IN ('none','A','B','C','done')),
  phase_since  TEXT NOT NULL,
  updated_by   TEXT NOT NULL,
  PRIMARY KEY (project_id, pattern)
);
