-- 0002_audit_chain (SQLite): the head of each project's audit hash chain.
CREATE TABLE audit_heads (
  project_id  TEXT PRIMARY KEY REFERENCES projects(project_id),
  seq         INTEGER NOT NULL,
  hash        TEXT NOT NULL
);
CREATE INDEX audit_events_action ON audit_events(project_id, action, seq);
