-- 0007_audit_append (PostgreSQL): extends the txn project's audit chain in the
-- database, in one statement: lock the head, then for each record compute
-- seq, prev_hash and hash exactly as aw_audit_hash() does in C
-- (SHA-256 over "<len>:<bytes>|" of prev_hash, project, seq, event_id, ts,
-- actor, action, target, trace_id, payload), insert it, and move the head.
-- One round trip instead of three, and the head stays locked from this
-- statement to COMMIT only. aw_audit_verify() recomputes every hash in C.
CREATE FUNCTION audit_field(v text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT octet_length(v)::text || ':' || v || '|' $$;

CREATE FUNCTION audit_append(p_events text) RETURNS bigint
LANGUAGE plpgsql SET search_path = awooop, pg_temp SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  pid text := current_setting('awooop.project_id', true);
  h_seq bigint;
  h_hash text;
  n_hash text;
  e jsonb;
BEGIN
  SELECT seq, hash INTO h_seq, h_hash FROM audit_heads WHERE project_id = pid FOR UPDATE;
  IF NOT FOUND THEN
    h_seq := 0;
    h_hash := repeat('0', 64);
  END IF;
  FOR e IN SELECT x FROM jsonb_array_elements(p_events::jsonb) AS x LOOP
    h_seq := h_seq + 1;
    n_hash := encode(sha256(convert_to(
        audit_field(h_hash) || audit_field(pid) || audit_field(h_seq::text) ||
        audit_field(e->>'event_id') || audit_field(e->>'ts') || audit_field(e->>'actor') ||
        audit_field(e->>'action') || audit_field(e->>'target') ||
        audit_field(e->>'trace_id') || audit_field(e->>'payload'), 'UTF8')), 'hex');
    INSERT INTO audit_events (project_id, event_id, seq, ts, actor, action, target, trace_id,
                              payload, prev_hash, hash)
    VALUES (pid, (e->>'event_id')::uuid, h_seq, (e->>'ts')::timestamptz, e->>'actor',
            e->>'action', e->>'target', e->>'trace_id', e->>'payload', h_hash, n_hash);
    h_hash := n_hash;
  END LOOP;
  INSERT INTO audit_heads (project_id, seq, hash) VALUES (pid, h_seq, h_hash)
    ON CONFLICT (project_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash;
  RETURN h_seq;
END $$;
