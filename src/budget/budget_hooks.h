/*
 * budget_hooks.h - test-only control of the budget service (not a public
 * header): move the hour the budget's periods and rolling windows are
 * computed in, to test a window's spend ageing out without waiting for it.
 */
#ifndef AWOOOP_BUDGET_HOOKS_H
#define AWOOOP_BUDGET_HOOKS_H

void budget_test_shift_hours(int hours);

#endif
