-- 0025_run_step_tries (SQLite): a step's tries in its journal entry (pg 0030
-- says why), and run_journal with the column.
ALTER TABLE run_steps ADD COLUMN tries INTEGER NOT NULL DEFAULT 0;

DROP VIEW run_journal;
CREATE VIEW run_journal AS
SELECT s.project_id, s.run_id, s.step_no, s.kind, s.state, s.idempotency_key, s.result,
       s.attempt, s.error_code, s.started_at, s.finished_at, s.tries
FROM run_steps s
WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = s.run_id
                    AND json_extract(r.last_step, '$.step_no') = s.step_no)
UNION ALL
SELECT r.project_id, r.run_id, json_extract(r.last_step, '$.step_no'),
       json_extract(r.last_step, '$.kind'), json_extract(r.last_step, '$.state'),
       json_extract(r.last_step, '$.idempotency_key'), json_extract(r.last_step, '$.result'),
       json_extract(r.last_step, '$.attempt'), json_extract(r.last_step, '$.error_code'),
       json_extract(r.last_step, '$.started_at'), json_extract(r.last_step, '$.finished_at'),
       coalesce(json_extract(r.last_step, '$.tries'), 0)
FROM runs r
WHERE r.last_step IS NOT NULL;
