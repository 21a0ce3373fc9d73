/*
 * clock.c - time sources and the canonical timestamp format (see clock.h).
 */
#include "awooop/clock.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Tests move the wall clock (clock_hook.h) to play an hour of schedules
 * in seconds. */
static _Atomic int64_t wall_shift_ns;

void clock_test_shift_wall(int64_t ns)
{
	atomic_store(&wall_shift_ns, ns);
}

int64_t aw_clock_wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec +
	       atomic_load_explicit(&wall_shift_ns, memory_order_relaxed);
}

int64_t aw_clock_wall_ms(void)
{
	return aw_clock_wall_ns() / 1000000;
}

/* Tests move the monotonic clock (clock_hook.h) to play a freshly booted host. */
static _Atomic int64_t mono_shift_ns;

void clock_test_shift_mono(int64_t ns)
{
	atomic_store(&mono_shift_ns, ns);
}

int64_t aw_clock_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec +
	       atomic_load_explicit(&mono_shift_ns, memory_order_relaxed);
}

void aw_clock_format(int64_t epoch_ms, char *out)
{
	time_t secs = (time_t)(epoch_ms / 1000);
	int ms = (int)(epoch_ms % 1000);
	if (ms < 0) {
		ms += 1000;
		secs -= 1;
	}
	struct tm tm;
	gmtime_r(&secs, &tm);
	char buf[64]; /* roomy: the compiler cannot see tm's fields are small */
	snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		 (tm.tm_year + 1900) % 10000, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		 tm.tm_sec, ms);
	memcpy(out, buf, AW_TS_LEN);
	out[AW_TS_LEN] = '\0';
}

void aw_clock_now(char *out)
{
	aw_clock_format(aw_clock_wall_ms(), out);
}

int aw_clock_parse(const char *s, int64_t *epoch_ms)
{
	int y, mo, d, h, mi, sec, ms;
	char z;
	if (strlen(s) != AW_TS_LEN)
		return -1;
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c", &y, &mo, &d, &h, &mi, &sec, &ms, &z) != 8 ||
	    z != 'Z')
		return -1;
	struct tm tm = {.tm_year = y - 1900,
			.tm_mon = mo - 1,
			.tm_mday = d,
			.tm_hour = h,
			.tm_min = mi,
			.tm_sec = sec};
	time_t t = timegm(&tm);
	*epoch_ms = (int64_t)t * 1000 + ms;
	return 0;
}

struct timespec aw_clock_after(int clock, int64_t ms)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

void aw_clock_cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &a);
	pthread_condattr_destroy(&a);
}
