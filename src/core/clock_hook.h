/*
 * clock_hook.h - test-only control of the clocks (not a public header).
 *
 * clock_test_shift_mono(ns) adds ns to every later aw_clock_mono_ns(): a test
 * shifts by -(now - 5 s) to run code as if the host had booted 5 s ago, which
 * is how "0 means never" sentinels show themselves. Keep the result positive.
 * clock_test_shift_wall(ns) adds ns to every later wall-clock reading of
 * this process (aw_clock_wall_ms/ns, aw_clock_now): a test plays an hour of
 * schedules by moving it. The store's own clock (PostgreSQL's now()) does
 * not move.
 */
#ifndef AWOOOP_CLOCK_HOOK_H
#define AWOOOP_CLOCK_HOOK_H

#include <stdint.h>

void clock_test_shift_mono(int64_t ns);
void clock_test_shift_wall(int64_t ns);

#endif
