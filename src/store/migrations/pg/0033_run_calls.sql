-- 0033_run_calls (PostgreSQL): the sub-steps of an agent step - every model
-- call and every tool call of its loop, journaled one row each in seq order
-- (1, 2, ...) under the run's step. A row is written "started" before its
-- call and "done" (with its result: the model's answer, the tool's text)
-- before the loop acts on it, so a resumed run replays what is done and
-- repeats only a call that never completed. A tool call that needs approval
-- is "parked"; the decision that approves it marks it "approved" in the same
-- transaction (approval.c), which is what lets that call - and no later one -
-- pass Gate 5. "failed" ends the step.
CREATE TABLE run_calls (
  project_id   TEXT NOT NULL REFERENCES projects(project_id),
  run_id       UUID NOT NULL,
  step_no      INTEGER NOT NULL,
  seq          INTEGER NOT NULL,
  kind         TEXT NOT NULL CHECK (kind IN ('model', 'tool')),
  name         TEXT NOT NULL,
  state        TEXT NOT NULL CHECK (state IN ('started', 'done', 'parked', 'approved', 'failed')),
  result       JSONB,
  error_code   TEXT,
  created_at   TIMESTAMPTZ NOT NULL,
  finished_at  TIMESTAMPTZ,
  PRIMARY KEY (project_id, run_id, step_no, seq)
);
ALTER TABLE run_calls ENABLE ROW LEVEL SECURITY;
ALTER TABLE run_calls FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON run_calls
  USING (project_id = current_setting('awooop.project_id', true))
  WITH CHECK (project_id = current_setting('awooop.project_id', true));
-- (the retention prune, platform_runs_prune below, deletes a run's calls)
GRANT SELECT, DELETE ON run_calls TO awooop_platform;
CREATE POLICY platform_prune ON run_calls FOR ALL TO awooop_platform USING (true);

-- An approval decides one parked call of an agent step, not the step: a
-- later call of the same step that needs approval parks again and counts
-- its own decisions (sub_no: the call's seq; 0 for a step that parks itself).
ALTER TABLE run_approvals ADD COLUMN sub_no INTEGER NOT NULL DEFAULT 0;
ALTER TABLE run_approvals DROP CONSTRAINT run_approvals_pkey;
ALTER TABLE run_approvals ADD PRIMARY KEY (project_id, run_id, step_no, sub_no, principal);

-- Pruning takes a run's calls with it.
CREATE OR REPLACE FUNCTION platform_runs_prune(p_before timestamptz, p_limit integer)
RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = awooop, pg_temp AS $$
  WITH d AS (SELECT r.run_id FROM runs r
             WHERE r.finished_at IS NOT NULL AND r.finished_at < p_before
               AND r.state IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'suggested')
             ORDER BY r.finished_at LIMIT least(greatest(p_limit, 1), 10000)
             FOR UPDATE SKIP LOCKED),
  s AS (DELETE FROM run_steps WHERE run_id IN (SELECT run_id FROM d)),
  a AS (DELETE FROM run_approvals WHERE run_id IN (SELECT run_id FROM d)),
  k AS (DELETE FROM run_calls WHERE run_id IN (SELECT run_id FROM d)),
  c AS (DELETE FROM conversation_runs WHERE run_id IN (SELECT run_id::text FROM d)),
  r AS (DELETE FROM runs WHERE run_id IN (SELECT run_id FROM d) RETURNING 1)
  SELECT count(*) FROM r
$$;
