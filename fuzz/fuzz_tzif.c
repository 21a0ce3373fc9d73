/*
 * fuzz_tzif.c - the time zone parsers on arbitrary bytes: a TZif file
 * (input beginning "TZif") or else a POSIX TZ string. An accepted zone's
 * offsets lie within its range at any instant, and a wall-clock and a
 * real-time cron expression tick strictly later in it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/cron.h"
#include "awooop/tz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	aw_tz *tz = NULL;
	aw_err e = size >= 4 && memcmp(data, "TZif", 4) == 0
			   ? aw_tz_parse(data, size, &tz, NULL)
			   : aw_tz_posix((const char *)data, size, &tz, NULL);
	if (e != AW_OK) {
		if (tz)
			abort();
		return 0;
	}
	int32_t lo, hi;
	aw_tz_range(tz, &lo, &hi);
	if (lo > hi)
		abort();
	static const int64_t at[] = {INT64_C(-9000000000), -1,	       0,
				     1774746000,	   1792890000, 4102444800,
				     INT64_C(200000000000)};
	for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
		int32_t o = aw_tz_offset(tz, at[i]);
		if (o < lo || o > hi)
			abort();
	}
	aw_cron c[2];
	if (aw_cron_parse("30 2 * * *", &c[0], NULL) || aw_cron_parse("*/20 * * * *", &c[1], NULL))
		abort();
	for (int k = 0; k < 2; k++) {
		int64_t from = 1774740000000LL, t;
		for (int j = 0; j < 2; j++) {
			if (aw_cron_next(&c[k], tz, from, &t) == 0 && t <= from)
				abort();
			from += 86400000LL * 180;
		}
	}
	aw_tz_free(tz);
	return 0;
}
