-- 0004_relay (SQLite): nothing to add; the relay reads contract_outbox directly
-- (one process, no roles). Kept so both dialects share version numbers.
SELECT 1;
