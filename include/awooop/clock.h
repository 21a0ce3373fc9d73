/*
 * clock.h - wall and monotonic time, and the one timestamp format awooop stores
 * and prints: RFC 3339 UTC with milliseconds, "2026-11-29T09:54:27.123Z"
 * (fixed width, so it also sorts as text in SQLite).
 */
#ifndef AWOOOP_CLOCK_H
#define AWOOOP_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#define AW_TS_LEN 24 /* "YYYY-MM-DDTHH:MM:SS.mmmZ" without the NUL */

int64_t aw_clock_wall_ms(void); /* Unix epoch milliseconds */
int64_t aw_clock_wall_ns(void); /* Unix epoch nanoseconds */
int64_t aw_clock_mono_ns(void); /* monotonic nanoseconds, for durations */

/* "Never" on the monotonic clock. 0 is not "long ago": on a host that booted a
 * minute ago the monotonic clock itself is near 0. Compare with
 * aw_clock_older_than(), never by subtracting from the sentinel. */
#define AW_MONO_NEVER INT64_MIN
/* 1 when `since` is AW_MONO_NEVER or lies more than `ns` before `now`. */
static inline int aw_clock_older_than(int64_t since, int64_t now, int64_t ns)
{
	return since == AW_MONO_NEVER || now - since > ns;
}
/* Formats epoch ms into out[AW_TS_LEN + 1]. */
void aw_clock_format(int64_t epoch_ms, char *out);
/* Current time formatted. */
void aw_clock_now(char *out);
/* The absolute time ms from now on clock (CLOCK_MONOTONIC, CLOCK_REALTIME),
 * for pthread_cond_timedwait. */
struct timespec aw_clock_after(int clock, int64_t ms);
/* Initialises cv to time its waits on CLOCK_MONOTONIC (pair with
 * aw_clock_after(CLOCK_MONOTONIC, ms)): a wall-clock step moves no deadline. */
void aw_clock_cond_init(pthread_cond_t *cv);
/* Parses the stored format back; -1 on a malformed string. */
int aw_clock_parse(const char *s, int64_t *epoch_ms);

#endif
