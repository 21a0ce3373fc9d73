-- 0007_audit_append (SQLite): nothing to add; the single writer extends the
-- chain from C (src/audit). Kept so both dialects share version numbers.
SELECT 1;
