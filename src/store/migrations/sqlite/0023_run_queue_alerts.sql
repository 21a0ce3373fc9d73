-- 0023_run_queue_alerts (SQLite): the index the age of each queue's oldest
-- runnable run is read from (see the PostgreSQL migration 0028): one index
-- descent per queue, whatever the backlog.
CREATE INDEX runs_due_queue ON runs (project_id, queue, run_after)
  WHERE state IN ('queued', 'retry_wait');
