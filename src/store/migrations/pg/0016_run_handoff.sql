-- 0016_run_handoff (PostgreSQL): a run handed straight to an idle worker
-- thread of the submitting process is inserted already claimed; only an
-- insert of runs that wait to be claimed wakes the workers of every process
-- (a NOTIFY also serializes commits: the hand-off skips it).
CREATE OR REPLACE FUNCTION runs_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM new_runs WHERE state <> 'claimed') THEN
    PERFORM pg_notify('awooop_runs', '');
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER runs_notify ON runs;
CREATE TRIGGER runs_notify AFTER INSERT ON runs REFERENCING NEW TABLE AS new_runs
  FOR EACH STATEMENT EXECUTE FUNCTION runs_notify();
