-- 0026_schedules (SQLite): runs started on a cron schedule (see the
-- PostgreSQL migration). Firing runs under the single writer, so the
-- compare-and-set on next_fire_at is all two workers need.
CREATE TABLE schedules (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  schedule_id  TEXT NOT NULL,
  name         TEXT NOT NULL,
  cron         TEXT NOT NULL,
  timezone     TEXT NOT NULL,
  catch_up     TEXT NOT NULL CHECK (catch_up IN ('skip', 'once')),
  run          TEXT NOT NULL,
  next_fire_at TEXT,
  last_fire_at TEXT,
  last_run_id  TEXT,
  last_error   TEXT,
  created_at   TEXT NOT NULL,
  created_by   TEXT NOT NULL,
  updated_at   TEXT NOT NULL,
  PRIMARY KEY (project_id, schedule_id),
  UNIQUE (project_id, name)
);
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE next_fire_at IS NOT NULL;
CREATE TABLE schedule_fires (
  project_id  TEXT NOT NULL REFERENCES projects(project_id),
  schedule_id TEXT NOT NULL,
  tick_at     TEXT NOT NULL,
  run_id      TEXT NOT NULL,
  missed      INTEGER NOT NULL DEFAULT 0,
  fired_at    TEXT NOT NULL,
  PRIMARY KEY (project_id, schedule_id, tick_at),
  FOREIGN KEY (project_id, schedule_id) REFERENCES schedules (project_id, schedule_id)
    ON DELETE CASCADE
);
