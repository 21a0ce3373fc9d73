-- 0018_audit_append_set (PostgreSQL): audit_append() of 0007 computes the
-- same hashes (exactly aw_audit_hash() of the C side) but inserts the records
-- in one statement: the loop only hashes. A worker's round appends up to a
-- batch of records while it holds the project's chain head, so the time a
-- head is held shrinks with the per-row INSERT executions it no longer runs.
CREATE OR REPLACE FUNCTION audit_append(p_events text) RETURNS bigint
LANGUAGE plpgsql SET search_path = awooop, pg_temp SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  pid text := current_setting('awooop.project_id', true);
  evs jsonb := p_events::jsonb;
  n integer := jsonb_array_length(evs);
  h_seq bigint;
  h_hash text;
  hashes text[]; -- hashes[1]: the head before; hashes[i + 1]: record i's
  e jsonb;
BEGIN
  SELECT seq, hash INTO h_seq, h_hash FROM audit_heads WHERE project_id = pid FOR UPDATE;
  IF NOT FOUND THEN
    h_seq := 0;
    h_hash := repeat('0', 64);
  END IF;
  hashes := ARRAY[h_hash];
  FOR i IN 1 .. n LOOP
    e := evs -> (i - 1);
    hashes := hashes || encode(sha256(convert_to(
        audit_field(hashes[i]) || audit_field(pid) || audit_field((h_seq + i)::text) ||
        audit_field(e->>'event_id') || audit_field(e->>'ts') || audit_field(e->>'actor') ||
        audit_field(e->>'action') || audit_field(e->>'target') ||
        audit_field(e->>'trace_id') || audit_field(e->>'payload'), 'UTF8')), 'hex');
  END LOOP;
  INSERT INTO audit_events (project_id, event_id, seq, ts, actor, action, target, trace_id,
                            payload, prev_hash, hash)
  SELECT pid, (x.e->>'event_id')::uuid, h_seq + x.i, (x.e->>'ts')::timestamptz, x.e->>'actor',
         x.e->>'action', x.e->>'target', x.e->>'trace_id', x.e->>'payload', hashes[x.i],
         hashes[x.i + 1]
  FROM jsonb_array_elements(evs) WITH ORDINALITY AS x(e, i);
  INSERT INTO audit_heads (project_id, seq, hash) VALUES (pid, h_seq + n, hashes[n + 1])
    ON CONFLICT (project_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash;
  RETURN h_seq + n;
END $$;
