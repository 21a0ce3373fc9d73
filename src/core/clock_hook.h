/*
 * clock_hook.h - test-only control of the monotonic clock (not a public header).
 *
 * aw_clock_test_shift_mono(ns) adds ns to every later aw_clock_mono_ns(): a test
 * shifts by -(now - 5 s) to run code as if the host had booted 5 s ago, which
 * is how "0 means never" sentinels show themselves. Keep the result positive.
 */
#ifndef AWOOOP_CLOCK_HOOK_H
#define AWOOOP_CLOCK_HOOK_H

#include <stdint.h>

void aw_clock_test_shift_mono(int64_t ns);

#endif
