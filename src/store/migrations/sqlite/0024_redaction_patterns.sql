-- 0024_redaction_patterns (SQLite): a project's custom redaction patterns,
-- set by the platform only (see the PostgreSQL migration). version grows by
-- one at each change and is never reset (clearing writes []).
CREATE TABLE redaction_patterns (
  project_id TEXT PRIMARY KEY REFERENCES projects(project_id),
  version    INTEGER NOT NULL CHECK (version > 0),
  patterns   TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  updated_by TEXT NOT NULL
);
