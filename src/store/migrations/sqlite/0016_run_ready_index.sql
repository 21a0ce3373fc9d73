-- 0016_run_ready_index (SQLite): runs_ready is left over from the claim before
-- 0014 (claims read runs_ready_queue); every run entering or leaving `queued`
-- paid for it.
DROP INDEX runs_ready;
