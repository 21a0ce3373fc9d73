-- 0026_budget_overshoot (PostgreSQL): a ledger line of its own for what an
-- upstream billed beyond a call's reservation. A settlement records what the
-- upstream reports, never capped at the reservation: the "settle" line keeps
-- at most what was held (so reserve = settle + release + reap still
-- balances) and the excess is an "overshoot" line; the period's settled
-- spend is settle + reap + overshoot.
ALTER TABLE budget_ledger DROP CONSTRAINT IF EXISTS budget_ledger_kind_check;
ALTER TABLE budget_ledger ADD CONSTRAINT budget_ledger_kind_check
  CHECK (kind IN ('reserve','settle','release','reap','overshoot'));
