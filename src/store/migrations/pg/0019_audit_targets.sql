-- 0019_audit_targets (PostgreSQL): a record about several targets (a worker's
-- round: one record for the runs that made the same move, instead of one
-- record a run) is found from each target through this index. It is derived
-- from the chain - the record's payload lists the same targets, and the hash
-- covers it - and append-only like the chain (pg_grants revokes UPDATE and
-- DELETE from the application role). Pruned runs keep theirs, as they keep
-- their records.
CREATE TABLE audit_targets (
  project_id TEXT NOT NULL,
  target     TEXT NOT NULL,
  event_id   UUID NOT NULL,
  PRIMARY KEY (project_id, target, event_id)
);
ALTER TABLE audit_targets ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_targets FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON audit_targets
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
