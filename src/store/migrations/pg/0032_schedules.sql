-- 0032_schedules (PostgreSQL): runs started on a cron schedule. A schedule
-- is a project's run template (a run request, checked when it is written)
-- with a cron expression, an IANA time zone and a catch-up policy; its row
-- carries next_fire_at, the next tick. A worker fires a due schedule in one
-- transaction of its project: the row locked (FOR UPDATE SKIP LOCKED: a
-- schedule another worker is firing is passed over), the run submitted with
-- the idempotency key schedule:<id>:<tick>, the fire recorded, next_fire_at
-- moved on by compare-and-set - so across every worker process a tick fires
-- once. Workers find due schedules across projects through
-- platform_schedules_due() only (ids and times, no template).
CREATE TABLE schedules (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  schedule_id  UUID NOT NULL,
  name         TEXT NOT NULL,
  cron         TEXT NOT NULL,
  timezone     TEXT NOT NULL,
  catch_up     TEXT NOT NULL CHECK (catch_up IN ('skip', 'once')),
  run          JSONB NOT NULL,
  next_fire_at TIMESTAMPTZ,
  last_fire_at TIMESTAMPTZ,
  last_run_id  UUID,
  last_error   TEXT,
  created_at   TIMESTAMPTZ NOT NULL,
  created_by   TEXT NOT NULL,
  updated_at   TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (project_id, schedule_id),
  UNIQUE (project_id, name)
);
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE next_fire_at IS NOT NULL;
ALTER TABLE schedules ENABLE ROW LEVEL SECURITY;
ALTER TABLE schedules FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON schedules
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
GRANT SELECT ON schedules TO awooop_platform;
CREATE POLICY platform_read ON schedules FOR SELECT TO awooop_platform USING (true);

-- The ticks a schedule fired (the newest 100 are kept): which run each
-- started, and whether it was a catch-up for missed ticks (missed > 0).
-- The primary key is the last guard: one run per tick.
CREATE TABLE schedule_fires (
  project_id  TEXT NOT NULL REFERENCES projects(project_id),
  schedule_id UUID NOT NULL,
  tick_at     TIMESTAMPTZ NOT NULL,
  run_id      UUID NOT NULL,
  missed      INTEGER NOT NULL DEFAULT 0,
  fired_at    TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (project_id, schedule_id, tick_at),
  FOREIGN KEY (project_id, schedule_id) REFERENCES schedules (project_id, schedule_id)
    ON DELETE CASCADE
);
ALTER TABLE schedule_fires ENABLE ROW LEVEL SECURITY;
ALTER TABLE schedule_fires FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON schedule_fires
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));

-- The schedules of every project due by p_now, oldest tick first.
CREATE FUNCTION platform_schedules_due(p_now timestamptz, p_limit integer)
RETURNS TABLE (project_id text, schedule_id uuid, next_fire_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = awooop, pg_temp AS $$
  SELECT s.project_id, s.schedule_id, s.next_fire_at FROM schedules s
  WHERE s.next_fire_at <= p_now
  ORDER BY s.next_fire_at LIMIT least(greatest(p_limit, 1), 1000)
$$;
ALTER FUNCTION platform_schedules_due(timestamptz, integer) OWNER TO awooop_platform;
REVOKE ALL ON FUNCTION platform_schedules_due(timestamptz, integer) FROM PUBLIC;
