-- 0017_run_ready_index (PostgreSQL): runs_ready (priority, run_id over every
-- project's runnable runs) is left over from the claim before 0014; claims
-- read runs_ready_queue. Every run entering or leaving `queued` still paid
-- for it, and the planner of the claim's generic plan could pick it (a filter
-- over every project's backlog instead of one queue's head).
DROP INDEX runs_ready;
