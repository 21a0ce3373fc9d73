-- 0018_run_last_step (SQLite): the last step's journal entry in the run's
-- row, and run_journal, the journal as readers see it (pg 0021 says why).
ALTER TABLE runs ADD COLUMN last_step TEXT;

CREATE VIEW run_journal AS
SELECT s.project_id, s.run_id, s.step_no, s.kind, s.state, s.idempotency_key, s.result,
       s.attempt, s.error_code, s.started_at, s.finished_at
FROM run_steps s
WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = s.run_id
                    AND json_extract(r.last_step, '$.step_no') = s.step_no)
UNION ALL
SELECT r.project_id, r.run_id, json_extract(r.last_step, '$.step_no'),
       json_extract(r.last_step, '$.kind'), json_extract(r.last_step, '$.state'),
       json_extract(r.last_step, '$.idempotency_key'), json_extract(r.last_step, '$.result'),
       json_extract(r.last_step, '$.attempt'), json_extract(r.last_step, '$.error_code'),
       json_extract(r.last_step, '$.started_at'), json_extract(r.last_step, '$.finished_at')
FROM runs r
WHERE r.last_step IS NOT NULL;
