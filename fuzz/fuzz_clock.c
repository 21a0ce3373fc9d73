/*
 * fuzz_clock.c - the timestamp parser on arbitrary bytes (the time filters
 * of the runs list, the audit list and spend over time, a run's run_at): a
 * time it accepts is one, written back exactly as it was given (no month 13
 * or 30 February normalised into another day), and its instant formats and
 * parses back to itself.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/clock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[AW_TS_LEN + 8];
	size_t n = size < sizeof s - 1 ? size : sizeof s - 1;
	memcpy(s, data, n);
	s[n] = '\0';
	int64_t ms;
	if (aw_clock_parse(s, &ms) != 0)
		return 0;
	char back[AW_TS_LEN + 1];
	aw_clock_format(ms, back);
	if (strcmp(back, s) != 0)
		abort(); /* accepted, but another time than the one given */
	int64_t again;
	if (aw_clock_parse(back, &again) != 0 || again != ms)
		abort();
	return 0;
}
