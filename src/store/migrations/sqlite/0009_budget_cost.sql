-- 0009_budget_cost (SQLite): cost limits beside token limits. Costs are
-- integers of micro-USD (a price per million tokens times tokens), so the
-- conditional UPDATE of a reservation checks both limits exactly; a
-- cost_limit of -1 means none. The ledger says which model a settlement paid.
-- Rolling windows keep their settled spend in hourly rows "h:<hour>" summed
-- under the lock of the window's own row (see budget_store.c).
ALTER TABLE budget_periods ADD COLUMN cost_limit INTEGER NOT NULL DEFAULT -1;
ALTER TABLE budget_periods ADD COLUMN cost_reserved INTEGER NOT NULL DEFAULT 0
  CHECK (cost_reserved >= 0);
ALTER TABLE budget_periods ADD COLUMN cost_settled INTEGER NOT NULL DEFAULT 0
  CHECK (cost_settled >= 0);
ALTER TABLE budget_reservations ADD COLUMN cost INTEGER NOT NULL DEFAULT 0 CHECK (cost >= 0);
ALTER TABLE budget_ledger ADD COLUMN cost INTEGER NOT NULL DEFAULT 0;
ALTER TABLE budget_ledger ADD COLUMN model TEXT NOT NULL DEFAULT '';
