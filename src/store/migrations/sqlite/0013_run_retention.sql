-- 0013_run_retention (SQLite): finished runs are pruned after the retention
-- (serve --run-retention-h) with their journal, approvals and conversation
-- links, in batches by the workers' reaper; the audit records and the budget
-- ledger stay.
CREATE INDEX runs_finished ON runs (finished_at) WHERE finished_at IS NOT NULL;
