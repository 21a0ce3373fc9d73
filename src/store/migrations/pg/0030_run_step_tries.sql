-- 0030_run_step_tries (PostgreSQL): how many times a step's execution ended
-- (a "started" entry: before it), so that a step's own retry policy
-- ("retry": {"attempts": N}) counts the step's tries, not the run's
-- attempts; the journal view gains the column (last, so the view is
-- replaced in place and keeps its grant).
ALTER TABLE run_steps ADD COLUMN tries integer NOT NULL DEFAULT 0;

CREATE OR REPLACE VIEW run_journal WITH (security_invoker = true) AS
SELECT s.project_id, s.run_id, s.step_no, s.kind, s.state, s.idempotency_key, s.result,
       s.attempt, s.error_code, s.started_at, s.finished_at, s.tries
FROM run_steps s
WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = s.run_id
                    AND (r.last_step->>'step_no')::integer = s.step_no)
UNION ALL
SELECT r.project_id, r.run_id, (r.last_step->>'step_no')::integer, r.last_step->>'kind',
       r.last_step->>'state', r.last_step->>'idempotency_key',
       nullif(r.last_step->'result', 'null'::jsonb), (r.last_step->>'attempt')::integer,
       r.last_step->>'error_code', (r.last_step->>'started_at')::timestamptz,
       (r.last_step->>'finished_at')::timestamptz,
       coalesce((r.last_step->>'tries')::integer, 0)
FROM runs r
WHERE r.last_step IS NOT NULL;
