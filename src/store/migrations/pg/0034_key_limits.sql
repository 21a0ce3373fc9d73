-- 0034_key_limits (PostgreSQL): virtual keys. A key may carry an expiry and
-- limits (allowed models, requests and tokens per minute, a budget of its
-- own, team/user metadata) as one JSON document the tenancy service checks
-- before it writes it. The rows those limits count in are budget_periods
-- rows of the key's project ("kb:<key>:<period>", "kt:<key>:<minute>",
-- "kr:<key>:<minute>"); a reservation names the rows it holds besides its
-- period's in `extra`, so its settlement moves them together.
ALTER TABLE api_keys ADD COLUMN expires_at TIMESTAMPTZ;
ALTER TABLE api_keys ADD COLUMN limits TEXT NOT NULL DEFAULT '{}';
ALTER TABLE budget_reservations ADD COLUMN extra TEXT NOT NULL DEFAULT '';

-- Authenticates a bearer key by its SHA-256 before its project is known:
-- now with the key's expiry and limits (the call's admission needs them).
DROP FUNCTION platform_lookup_key(text);
CREATE FUNCTION platform_lookup_key(p_hash text)
RETURNS TABLE (key_id uuid, project_id text, name text, scope text, revoked_at timestamptz,
               expires_at timestamptz, limits text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = awooop, pg_temp AS $$
  SELECT k.key_id, k.project_id, k.name, k.scope, k.revoked_at, k.expires_at, k.limits
  FROM api_keys k WHERE k.key_hash = p_hash
$$;
ALTER FUNCTION platform_lookup_key(text) OWNER TO awooop_platform;
REVOKE ALL ON FUNCTION platform_lookup_key(text) FROM PUBLIC;
