-- 0015_run_queues (SQLite): named queues with per-queue concurrency limits
-- per project (see the PostgreSQL migration). The claim runs under the
-- single writer lock, so counting a queue's runs in flight needs no other.
ALTER TABLE runs ADD COLUMN queue TEXT NOT NULL DEFAULT 'default';
CREATE TABLE run_queues (
  project_id  TEXT NOT NULL REFERENCES projects(project_id),
  name        TEXT NOT NULL,
  concurrency INTEGER CHECK (concurrency BETWEEN 1 AND 100000),
  updated_at  TEXT NOT NULL,
  updated_by  TEXT NOT NULL,
  PRIMARY KEY (project_id, name)
);
DROP INDEX runs_ready_project;
CREATE INDEX runs_ready_queue ON runs (project_id, queue, priority DESC, run_id)
  WHERE state IN ('queued', 'retry_wait');
CREATE INDEX runs_inflight_queue ON runs (project_id, queue)
  WHERE state IN ('claimed', 'running');
