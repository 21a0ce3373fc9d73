-- 0014_fair_claim (SQLite): claims go round robin over projects (each
-- project's first runnable run, then each one's second, ...), by priority
-- and age within a project, so one tenant's backlog or priorities cannot
-- hold another's runs back; this index finds each project's next runs.
CREATE INDEX runs_ready_project ON runs (project_id, priority DESC, run_id)
  WHERE state IN ('queued', 'retry_wait');
