/*
 * fuzz_cron.c - the cron parser on arbitrary bytes (the input up to its
 * first NUL is the expression), then its next ticks in three zones (UTC,
 * a northern and a half-hour southern DST rule) from two instants: every
 * tick lies strictly after the one before, and an accepted expression ticks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/cron.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char expr[AW_CRON_MAX + 2];
	size_t n = size < sizeof expr - 1 ? size : sizeof expr - 1;
	memcpy(expr, data, n);
	expr[n] = '\0';
	aw_cron c;
	if (aw_cron_parse(expr, &c, NULL) != AW_OK)
		return 0;
	static const char *const zones[] = {"CET-1CEST,M3.5.0,M10.5.0/3",
					    "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0"};
	aw_tz *tz[3] = {NULL, NULL, NULL};
	for (int i = 0; i < 2; i++)
		if (aw_tz_posix(zones[i], strlen(zones[i]), &tz[i + 1], NULL) != AW_OK)
			abort();
	static const int64_t from[] = {1774740000000LL, 1792886400000LL}; /* near 2026's changes */
	for (int z = 0; z < 3; z++)
		for (int f = 0; f < 2; f++) {
			int64_t at = from[f], t;
			for (int k = 0; k < 3; k++) {
				if (aw_cron_next(&c, tz[z], at, &t) != 0)
					abort(); /* accepted: it ticks (within 400 years) */
				if (t <= at)
					abort();
				at = t;
			}
		}
	aw_tz_free(tz[1]);
	aw_tz_free(tz[2]);
	return 0;
}
