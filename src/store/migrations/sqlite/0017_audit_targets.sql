-- 0017_audit_targets (SQLite): a record about several targets (a worker's
-- round: one record for the runs that made the same move) is found from each
-- target through this index; derived from the chain (the record's payload
-- lists the same targets) and append-only like it.
CREATE TABLE audit_targets (
  project_id TEXT NOT NULL,
  target     TEXT NOT NULL,
  event_id   TEXT NOT NULL,
  PRIMARY KEY (project_id, target, event_id)
) WITHOUT ROWID;
