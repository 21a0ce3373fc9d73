-- 0031_run_queue_depth (PostgreSQL): how many runs each queue has due, beside
-- the age of its oldest (awooop_run_queue_depth{project,queue}, issue 45).
--
-- The same walk as 0028's platform_run_queue_oldest - per queue (each
-- project's "default" and every declared one) of runs_due_queue - now also
-- counts the queue's runs queued or in retry_wait that are due by p_now, at
-- most p_max of them (an index-only walk of those entries; a deeper backlog
-- reads as p_max). Its result changes, so it is dropped and created.
DROP FUNCTION platform_run_queue_oldest(timestamptz);
CREATE FUNCTION platform_run_queue_oldest(p_now timestamptz, p_max integer)
RETURNS TABLE (project_id text, queue text, due_at timestamptz, depth bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = awooop, pg_temp AS $$
  SELECT q.project_id, q.name, o.run_after, d.n FROM (
    SELECT p.project_id, 'default'::text AS name FROM projects p
    UNION ALL
    SELECT rq.project_id, rq.name FROM run_queues rq WHERE rq.name <> 'default') q
  CROSS JOIN LATERAL (
    SELECT r.run_after FROM runs r
    WHERE r.project_id = q.project_id AND r.queue = q.name
      AND r.state IN ('queued', 'retry_wait')
    ORDER BY r.run_after LIMIT 1) o
  CROSS JOIN LATERAL (
    SELECT count(*) AS n FROM (
      SELECT 1 FROM runs r
      WHERE r.project_id = q.project_id AND r.queue = q.name
        AND r.state IN ('queued', 'retry_wait') AND r.run_after <= p_now
      LIMIT greatest(p_max, 1)) c) d
  WHERE o.run_after <= p_now
$$;
ALTER FUNCTION platform_run_queue_oldest(timestamptz, integer) OWNER TO awooop_platform;
REVOKE ALL ON FUNCTION platform_run_queue_oldest(timestamptz, integer) FROM PUBLIC;
