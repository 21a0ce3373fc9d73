-- 0027_budget_suspension (PostgreSQL): who imposed a suspension. A
-- suspension the platform imposed (a platform-admin key, or a system context) is lifted only by the platform; one the project's
-- own operator imposed, or its budget's line 3 (kill), by the project.
-- imposed_by: 'platform', 'project' or 'budget' ('' for rows from before).
ALTER TABLE budget_state ADD COLUMN imposed_by TEXT NOT NULL DEFAULT ''
  CHECK (imposed_by IN ('', 'platform', 'project', 'budget'));
