-- 0035_audit_llm_calls_by_time: the model calls' audit records by time, for
-- spend over time (GET .../budget/spend sums a window of them by hour or
-- day). Partial: only llm.call records pay for it when written, not the
-- run transitions and the other records of the trail.
CREATE INDEX audit_events_llm_ts ON audit_events (project_id, ts) WHERE action = 'llm.call';
