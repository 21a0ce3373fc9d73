-- 0020_contract_rollback (SQLite): a rollback revision names the earlier
-- revision whose body it restores (rollback_of) and the revision that was
-- active when it was requested (rollback_from; NULL when none was). Both are
-- NULL for every other revision. Activation reads them: a rollback counts
-- against the approval policy's rollback_threshold, only while the active
-- revision is still rollback_from, and only while its body hash equals
-- rollback_of's (docs/contracts.md "Rollback").
ALTER TABLE contract_revisions ADD COLUMN rollback_of TEXT REFERENCES contract_revisions(revision_id);
ALTER TABLE contract_revisions ADD COLUMN rollback_from TEXT;
