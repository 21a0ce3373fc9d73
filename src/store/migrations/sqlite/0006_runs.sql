-- 0006_runs (SQLite): the run runtime's columns and indexes. Workers claim
-- under BEGIN IMMEDIATE (the single writer) and are woken in-process.
ALTER TABLE runs ADD COLUMN started_at TEXT;
ALTER TABLE runs ADD COLUMN finished_at TEXT;
ALTER TABLE run_steps ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;
ALTER TABLE run_steps ADD COLUMN error_code TEXT;
DROP INDEX runs_claim;
CREATE INDEX runs_ready ON runs (priority DESC, run_id) WHERE state IN ('queued', 'retry_wait');
CREATE INDEX runs_leased ON runs (lease_expires_at) WHERE state IN ('claimed', 'running');
CREATE INDEX audit_events_target ON audit_events (project_id, target);
