/*
 * cron.h - standard 5-field cron expressions and their ticks in a time zone.
 *
 *   minute hour day-of-month month day-of-week
 *   0-59   0-23 1-31         1-12  0-7 (0 and 7: Sunday)
 *
 * A field is a comma list of items: '*', N, N-M, each optionally /STEP (N/STEP
 * means N-last/STEP); months and weekdays also by name (JAN..DEC, SUN..SAT,
 * any case). Aliases: @yearly (@annually), @monthly, @weekly, @daily
 * (@midnight), @hourly. As in Vixie cron, when both day fields are
 * restricted (neither begins with '*') a day matches when either does;
 * otherwise both must.
 *
 * Ticks are instants (whole minutes of the zone's local time, as UTC
 * milliseconds). Where the zone's clock jumps (DST):
 *  - an expression whose hours are all 24 follows real time: a local time
 *    the spring-forward skips has no tick, one the fall-back repeats has a
 *    tick each time it occurs (every hour is an hour);
 *  - any other follows the wall clock, once per local day: a time the
 *    spring-forward skips ticks at the moment of the jump (02:30 -> 03:00 in
 *    Europe/Berlin), one the fall-back repeats ticks the first time only.
 * Several local times mapped onto one instant are one tick.
 */
#ifndef AWOOOP_CRON_H
#define AWOOOP_CRON_H

#include <stdint.h>

#include "awooop/err.h"
#include "awooop/tz.h"

#define AW_CRON_MAX 256 /* bytes of an expression */

typedef struct {
	uint64_t minutes; /* bit m: minute m */
	uint32_t hours;	  /* bit h */
	uint32_t days;	  /* bit d: day of month d (1..31) */
	uint16_t months;  /* bit m: month m (1..12) */
	uint8_t weekdays; /* bit d: 0 = Sunday .. 6 */
	int dom_star, dow_star;
} aw_cron;

/* Parses expr (NUL-terminated). AW_E_CRON with a message naming the field
 * and what is wrong ("hour field: 24 is out of 0-23"), also for an
 * expression no date can match ("30 * 31 2 *"). Pure (fuzzed by
 * fuzz/fuzz_cron.c). */
aw_err aw_cron_parse(const char *expr, aw_cron *out, aw_error *err);
/* The first tick strictly after after_ms (Unix ms) in tz (NULL: UTC) into
 * *out_ms. -1 when there is none within 400 years, or past year 9000. */
int aw_cron_next(const aw_cron *c, const aw_tz *tz, int64_t after_ms, int64_t *out_ms);

#endif
