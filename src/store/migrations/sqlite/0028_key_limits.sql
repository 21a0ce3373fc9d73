-- 0028_key_limits (SQLite): virtual keys (see the PostgreSQL migration 0034):
-- a key's expiry and limits, and the extra budget rows a reservation holds.
ALTER TABLE api_keys ADD COLUMN expires_at TEXT;
ALTER TABLE api_keys ADD COLUMN limits TEXT NOT NULL DEFAULT '{}';
ALTER TABLE budget_reservations ADD COLUMN extra TEXT NOT NULL DEFAULT '';
