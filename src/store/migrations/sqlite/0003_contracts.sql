-- 0003_contracts (SQLite): commit order of outbox events, approval lookups.
-- seq is assigned as max+1 under SQLite's single writer.
ALTER TABLE contract_outbox ADD COLUMN seq INTEGER;
CREATE UNIQUE INDEX contract_outbox_seq ON contract_outbox(seq);
CREATE INDEX contract_approvals_rev ON contract_approvals(project_id, revision_id);
