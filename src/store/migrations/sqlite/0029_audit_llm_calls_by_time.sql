-- 0029_audit_llm_calls_by_time (SQLite): the model calls' audit records by
-- time, for spend over time (see the PostgreSQL migration). Partial: only
-- llm.call records pay for it when written.
CREATE INDEX audit_events_llm_ts ON audit_events (project_id, ts) WHERE action = 'llm.call';
