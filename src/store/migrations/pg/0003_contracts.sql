-- 0003_contracts (PostgreSQL): commit order of outbox events, approval lookups.
-- Activations of one contract hold its advisory lock while inserting, so seq
-- order is commit order per contract.
ALTER TABLE contract_outbox ADD COLUMN seq BIGSERIAL;
CREATE UNIQUE INDEX contract_outbox_seq ON contract_outbox(seq);
CREATE INDEX contract_approvals_rev ON contract_approvals(project_id, revision_id);
