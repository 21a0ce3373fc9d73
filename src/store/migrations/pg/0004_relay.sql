-- 0004_relay (PostgreSQL): the outbox relay's platform path, and a wake-up.
-- The relay works across tenants, so like key lookup it goes through SECURITY
-- DEFINER functions owned by awooop_platform, which may read the outbox, set
-- delivered_at/relay_attempts and delete delivered rows - nothing else.
GRANT SELECT, DELETE ON contract_outbox TO awooop_platform;
GRANT UPDATE (delivered_at, relay_attempts) ON contract_outbox TO awooop_platform;
CREATE POLICY platform_relay ON contract_outbox TO awooop_platform USING (true) WITH CHECK (true);

-- Claims undelivered events in commit order; the row locks last until the
-- caller's transaction ends, and concurrent relays skip them.
CREATE FUNCTION platform_outbox_claim(p_limit integer)
RETURNS TABLE (event_id uuid, seq bigint, event_type text, project_id text,
               contract_family text, contract_id text, old_revision_id uuid,
               new_revision_id uuid, created_at timestamptz, relay_attempts integer)
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = awooop, pg_temp AS $$
  SELECT o.event_id, o.seq, o.event_type, o.project_id, o.contract_family, o.contract_id,
         o.old_revision_id, o.new_revision_id, o.created_at, o.relay_attempts
  FROM contract_outbox o WHERE o.delivered_at IS NULL
  ORDER BY o.seq LIMIT least(greatest(p_limit, 1), 1000)
  FOR UPDATE SKIP LOCKED
$$;

CREATE FUNCTION platform_outbox_done(p_event uuid, p_delivered boolean)
RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = awooop, pg_temp AS $$
  UPDATE contract_outbox
  SET delivered_at = CASE WHEN p_delivered THEN clock_timestamp() ELSE NULL END,
      relay_attempts = relay_attempts + CASE WHEN p_delivered THEN 0 ELSE 1 END
  WHERE event_id = p_event
$$;

CREATE FUNCTION platform_outbox_prune(p_before timestamptz)
RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = awooop, pg_temp AS $$
  WITH d AS (DELETE FROM contract_outbox
             WHERE delivered_at IS NOT NULL AND delivered_at < p_before RETURNING 1)
  SELECT count(*) FROM d
$$;

CREATE FUNCTION platform_outbox_stats()
RETURNS TABLE (undelivered bigint, oldest timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = awooop, pg_temp AS $$
  SELECT count(*), min(o.created_at) FROM contract_outbox o WHERE o.delivered_at IS NULL
$$;

ALTER FUNCTION platform_outbox_claim(integer) OWNER TO awooop_platform;
ALTER FUNCTION platform_outbox_done(uuid, boolean) OWNER TO awooop_platform;
ALTER FUNCTION platform_outbox_prune(timestamptz) OWNER TO awooop_platform;
ALTER FUNCTION platform_outbox_stats() OWNER TO awooop_platform;
REVOKE ALL ON FUNCTION platform_outbox_claim(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION platform_outbox_done(uuid, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION platform_outbox_prune(timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION platform_outbox_stats() FROM PUBLIC;

-- Relays LISTEN on awooop_outbox; the notification is delivered at commit.
CREATE FUNCTION outbox_notify() RETURNS trigger
LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('awooop_outbox', ''); RETURN NULL; END $$;
CREATE TRIGGER contract_outbox_notify AFTER INSERT ON contract_outbox
  FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();
