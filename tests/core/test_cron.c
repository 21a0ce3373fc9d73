/*
 * test_cron.c - unit tests of the cron parser (fields, lists, ranges, steps,
 * names, aliases, refusals with the field named), of time zones (names that
 * may reach the file system, POSIX TZ strings, TZif files against glibc's
 * own reading of the same files at 20,000 instants a zone), and of the next
 * tick across DST transitions, checked against a brute-force model of the
 * rules in cron.h over the 2026 transitions of seven zones.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "awooop/clock.h"
#include "awooop/cron.h"
#include "awooop/tz.h"

static int64_t ts(const char *s)
{
	int64_t ms = 0;
	assert_int_equal(aw_clock_parse(s, &ms), 0);
	return ms;
}

static aw_cron parse_ok(const char *expr)
{
	aw_cron c;
	aw_error err = {0};
	if (aw_cron_parse(expr, &c, &err) != AW_OK)
		fail_msg("%s: %s", expr, err.msg);
	return c;
}

static void refused(const char *expr, const char *needle)
{
	aw_cron c;
	aw_error err = {0};
	assert_int_equal(aw_cron_parse(expr, &c, &err), AW_E_CRON);
	if (!strstr(err.msg, needle))
		fail_msg("'%s': '%s' does not say '%s'", expr, err.msg, needle);
}

static void test_fields(void **state)
{
	aw_cron c = parse_ok("* * * * *");
	assert_true(c.minutes == (UINT64_C(1) << 60) - 1);
	assert_int_equal(c.hours, 0xFFFFFF);
	assert_int_equal(c.days, 0xFFFFFFFE);
	assert_int_equal(c.months, 0x1FFE);
	assert_int_equal(c.weekdays, 0x7F);
	assert_true(c.dom_star && c.dow_star);

	c = parse_ok("0,15,30,45 9-17 * * MON-FRI");
	assert_true(c.minutes == (1 | 1 << 15 | UINT64_C(1) << 30 | UINT64_C(1) << 45));
	assert_int_equal(c.hours, 0x3FE00);
	assert_int_equal(c.weekdays, 0x3E);
	assert_false(c.dow_star);

	c = parse_ok("*/15 */6 1-31/10 JAN,jul 0-7");
	assert_true(c.minutes == (1 | 1 << 15 | UINT64_C(1) << 30 | UINT64_C(1) << 45));
	assert_int_equal(c.hours, 1 | 1 << 6 | 1 << 12 | 1 << 18);
	assert_int_equal(c.days, 1u << 1 | 1u << 11 | 1u << 21 | 1u << 31);
	assert_int_equal(c.months, 1 << 1 | 1 << 7);
	assert_int_equal(c.weekdays, 0x7F); /* 7 is Sunday, bit 0 */
	assert_true(c.dom_star == 0);

	c = parse_ok("5/20 * * * 7"); /* N/STEP: N to the end */
	assert_true(c.minutes == (UINT64_C(1) << 5 | UINT64_C(1) << 25 | UINT64_C(1) << 45));
	assert_int_equal(c.weekdays, 1);

	c = parse_ok("  0   0\t* Dec sun,Sat  ");
	assert_int_equal(c.months, 1 << 12);
	assert_int_equal(c.weekdays, 1 | 1 << 6);

	c = parse_ok("0 0 * * fri-sun"); /* Sunday ends a range as 7 */
	assert_int_equal(c.weekdays, 1 | 1 << 5 | 1 << 6);
}

static void test_aliases(void **state)
{
	const char *pairs[][2] = {{"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"},
				  {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
				  {"@daily", "0 0 * * *"},   {"@MIDNIGHT", "0 0 * * *"},
				  {"@hourly", "0 * * * *"}};
	for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
		aw_cron a = parse_ok(pairs[i][0]), b = parse_ok(pairs[i][1]);
		assert_memory_equal(&a, &b, sizeof a);
	}
	refused("@reboot", "no @reboot");
	refused("@every 5m", "unknown alias");
}

static void test_refusals(void **state)
{
	refused("", "0 fields");
	refused("* * * *", "4 fields");
	refused("* * * * * *", "more than 5 fields");
	refused("60 * * * *", "minute field: 60 is out of 0-59");
	refused("* 24 * * *", "hour field: 24 is out of 0-23");
	refused("* * 0 * *", "day-of-month field: 0 is out of 1-31");
	refused("* * 32 * *", "day-of-month field: 32 is out of 1-31");
	refused("* * * 13 *", "month field: 13 is out of 1-12");
	refused("* * * 0 *", "month field: 0 is out of 1-12");
	refused("* * * * 8", "day-of-week field: 8 is out of 0-7");
	refused("5-1 * * * *", "minute field: the range 5-1 runs backwards");
	refused("* * * * FRI-MON", "day-of-week field: the range 5-1 runs backwards");
	refused("*/0 * * * *", "minute field: a step is 1-60");
	refused("*/61 * * * *", "minute field: a step is 1-60");
	refused("* */25 * * *", "hour field: a step is 1-24");
	refused("1,,2 * * * *", "minute field: a value is missing");
	refused("1, * * * *", "a value is missing after ','");
	refused("MON * * * *", "minute field: 'MON' is not a value");
	refused("* * * FOO *", "month field: 'FOO' is not a value");
	refused("* * * JANUARY *", "month field: 'JANUARY' is not a value");
	refused("1234 * * * *", "minute field: a number of more than 3 digits");
	refused("0 0 30 2 *", "never fires");
	refused("0 0 31 4,6,9,11 *", "never fires");
	refused("0 0 31 4 */2", "never fires");
	refused("? * * * *", "minute field: '?' is not a value");
	refused("0 0 L * *", "day-of-month field: 'L' is not a value");
	refused("0 0 * * 5#3", "day-of-week field: '#' where");
	refused("1-2-3 * * * *", "minute field: '-' where");
	refused("* * * * *\x01", "day-of-week field:");
	char big[400];
	memset(big, '1', sizeof big - 1);
	big[sizeof big - 1] = 0;
	refused(big, "at most 256 bytes");
	/* both day fields restricted: either may match, so a weekday saves it */
	parse_ok("0 0 31 2 MON");
	parse_ok("0 0 29 2 *");
}

static void test_names(void **state)
{
	assert_true(aw_tz_name_ok("Europe/Berlin"));
	assert_true(aw_tz_name_ok("Etc/GMT+5"));
	assert_true(aw_tz_name_ok("America/Argentina/Buenos_Aires"));
	assert_true(aw_tz_name_ok("UTC"));
	const char *bad[] = {
		"",
		"/etc/passwd",
		"../etc/passwd",
		"Europe/../../etc/passwd",
		"Europe//Berlin",
		"Europe/Berlin/",
		"zone.tab",
		"Europe/Ber lin",
		"-x",
		"Europe/-x",
		"a\nb",
		"0123456789012345678901234567890123456789012345678901234567890123456789"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (aw_tz_name_ok(bad[i]))
			fail_msg("accepted '%s'", bad[i]);
	aw_tz *tz = NULL;
	aw_error err = {0};
	assert_int_equal(aw_tz_load("Nowhere/Atlantis", &tz, &err), AW_E_CRON_ZONE);
	assert_non_null(strstr(err.msg, "unknown time zone Nowhere/Atlantis"));
	assert_int_equal(aw_tz_load("../../etc/passwd", &tz, &err), AW_E_CRON_ZONE);
	assert_int_equal(aw_tz_load("right/Europe/Berlin", &tz, &err), AW_E_CRON_ZONE);
	assert_int_equal(aw_tz_load("Europe", &tz, &err), AW_E_CRON_ZONE); /* a directory */
	assert_null(tz);
	assert_int_equal(aw_tz_load("UTC", &tz, &err), AW_OK);
	assert_int_equal(aw_tz_offset(tz, 0), 0);
	aw_tz_free(tz);
}

static void test_posix(void **state)
{
	const struct {
		const char *spec;
		const char *at;
		int32_t off;
	} ok[] = {
		{"UTC0", "2026-07-01T00:00:00.000Z", 0},
		{"EST5EDT,M3.2.0,M11.1.0", "2026-07-01T00:00:00.000Z", -4 * 3600},
		{"EST5EDT,M3.2.0,M11.1.0", "2026-01-01T00:00:00.000Z", -5 * 3600},
		{"EST5EDT", "2026-07-01T00:00:00.000Z", -4 * 3600}, /* the default rule */
		{"<+0530>-5:30", "2026-07-01T00:00:00.000Z", 5 * 3600 + 1800},
		{"CET-1CEST,M3.5.0,M10.5.0/3", "2026-03-29T00:59:59.000Z", 3600},
		{"CET-1CEST,M3.5.0,M10.5.0/3", "2026-03-29T01:00:00.000Z", 7200},
		{"CET-1CEST,M3.5.0,M10.5.0/3", "2026-10-25T00:59:59.000Z", 7200},
		{"CET-1CEST,M3.5.0,M10.5.0/3", "2026-10-25T01:00:00.000Z", 3600},
		/* southern hemisphere: DST across the new year */
		{"AEST-10AEDT,M10.1.0,M4.1.0/3", "2026-01-15T00:00:00.000Z", 11 * 3600},
		{"AEST-10AEDT,M10.1.0,M4.1.0/3", "2026-06-15T00:00:00.000Z", 10 * 3600},
		{"AEST-10AEDT,M10.1.0,M4.1.0/3", "2026-12-31T23:00:00.000Z", 11 * 3600},
		/* Julian days and RFC 8536's all-year DST */
		{"XST3XDT,J60/2,J300/2", "2028-03-01T12:00:00.000Z", -2 * 3600},
		{"<-03>3<-02>,0/0,J365/25", "2026-07-01T00:00:00.000Z", -2 * 3600},
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		aw_tz *tz = NULL;
		aw_error err = {0};
		if (aw_tz_posix(ok[i].spec, strlen(ok[i].spec), &tz, &err))
			fail_msg("%s: %s", ok[i].spec, err.msg);
		int32_t off = aw_tz_offset(tz, ts(ok[i].at) / 1000);
		if (off != ok[i].off)
			fail_msg("%s at %s: %d, not %d", ok[i].spec, ok[i].at, off, ok[i].off);
		aw_tz_free(tz);
	}
	const char *bad[] = {"",
			     "E5",
			     "EST",
			     "EST25",
			     "EST5EDT,M13.1.0,M11.1.0",
			     "EST5EDT,M3.2.0",
			     "EST5EDT,M3.6.0,M11.1.0",
			     "EST5EDT,M3.2.7,M11.1.0",
			     "EST5EDT,J0,J10",
			     "EST5EDT,366,10",
			     "EST5EDT,M3.2.0/168,M11.1.0",
			     "<AB>5",
			     "<ABC5",
			     "EST5EDT,M3.2.0,M11.1.0x",
			     "EST5:60"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		aw_tz *tz = NULL;
		if (aw_tz_posix(bad[i], strlen(bad[i]), &tz, NULL) != AW_E_CRON_ZONE)
			fail_msg("accepted '%s'", bad[i]);
	}
}

/* The zones the DST tests walk, and glibc's reading of their files. */
static const char *const ZONES[] = {
	"Europe/Berlin",       "America/New_York", "Australia/Lord_Howe", "Australia/Sydney",
	"Asia/Kolkata",	       "Pacific/Apia",	   "Africa/Casablanca",	  "Europe/Dublin",
	"America/Santiago",    "Asia/Tehran",	   "America/St_Johns",	  "Pacific/Chatham",
	"Antarctica/Troll",    "Etc/GMT-14",	   "America/Sao_Paulo",	  "Europe/London",
	"America/Los_Angeles",
};

static void test_against_glibc(void **state)
{
	/* glibc reads the same files: its gmtoff must be ours, from 1901 to
	 * 2200 (past 2037 only the footer's rule speaks) */
	uint64_t rng = 42;
	for (size_t z = 0; z < sizeof ZONES / sizeof ZONES[0]; z++) {
		aw_tz *tz = NULL;
		aw_error err = {0};
		if (aw_tz_load(ZONES[z], &tz, &err))
			fail_msg("%s: %s", ZONES[z], err.msg);
		setenv("TZ", ZONES[z], 1);
		tzset();
		for (int i = 0; i < 20000; i++) {
			rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
			int64_t t = -2208988800LL + (int64_t)((rng >> 20) % 9467280000ULL);
			if (i < 400) /* and the hours around 2026's transitions */
				t = 1767225600LL + (int64_t)((rng >> 20) % (365LL * 86400));
			time_t tt = (time_t)t;
			struct tm tm;
			localtime_r(&tt, &tm);
			int32_t ours = aw_tz_offset(tz, t);
			if (ours != tm.tm_gmtoff)
				fail_msg("%s at %lld: ours %d, glibc %ld", ZONES[z], (long long)t,
					 ours, tm.tm_gmtoff);
		}
		aw_tz_free(tz);
	}
	unsetenv("TZ");
	tzset();
}

static int64_t next(const char *expr, const char *zone, int64_t after_ms)
{
	aw_cron c = parse_ok(expr);
	aw_tz *tz = NULL;
	aw_error err = {0};
	if (aw_tz_load(zone, &tz, &err))
		fail_msg("%s: %s", zone, err.msg);
	int64_t out = 0;
	int rc = aw_cron_next(&c, tz, after_ms, &out);
	aw_tz_free(tz);
	return rc ? -1 : out;
}

static void expect_next(const char *expr, const char *zone, const char *after, const char *want)
{
	int64_t got = next(expr, zone, ts(after));
	char s[AW_TS_LEN + 1] = "none";
	if (got >= 0)
		aw_clock_format(got, s);
	if (strcmp(s, want) != 0)
		fail_msg("'%s' in %s after %s: %s, not %s", expr, zone, after, s, want);
}

static void test_next_utc(void **state)
{
	expect_next("0 * * * *", "UTC", "2026-03-01T10:15:00.000Z", "2026-03-01T11:00:00.000Z");
	expect_next("*/15 * * * *", "UTC", "2026-03-01T10:15:00.000Z", "2026-03-01T10:30:00.000Z");
	expect_next("*/15 * * * *", "UTC", "2026-03-01T10:14:59.999Z", "2026-03-01T10:15:00.000Z");
	expect_next("0 0 29 2 *", "UTC", "2026-03-01T00:00:00.000Z", "2028-02-29T00:00:00.000Z");
	expect_next("0 0 29 2 *", "UTC", "2096-03-01T00:00:00.000Z", "2104-02-29T00:00:00.000Z");
	/* 2026-03-06 is a Friday */
	expect_next("0 9 * * MON-FRI", "UTC", "2026-03-06T10:00:00.000Z",
		    "2026-03-09T09:00:00.000Z");
	/* both day fields restricted: the 13th or a Friday */
	expect_next("0 0 13 * 5", "UTC", "2026-03-06T10:00:00.000Z", "2026-03-13T00:00:00.000Z");
	expect_next("0 0 13 * 5", "UTC", "2026-03-14T10:00:00.000Z", "2026-03-20T00:00:00.000Z");
	/* '*' first in the day of month: both must match (a Friday on odd days) */
	expect_next("0 0 */2 * 5", "UTC", "2026-03-06T10:00:00.000Z", "2026-03-13T00:00:00.000Z");
	expect_next("0 0 29 2 *", "Etc/GMT-14", "2026-03-01T00:00:00.000Z",
		    "2028-02-28T10:00:00.000Z");
	expect_next("30 8 * * *", "Asia/Kolkata", "2026-05-01T00:00:00.000Z",
		    "2026-05-01T03:00:00.000Z");
	expect_next("@yearly", "UTC", "8999-06-01T00:00:00.000Z", "none");
}

static void test_next_dst(void **state)
{
	/* Europe/Berlin 2026: 02:00 CET -> 03:00 CEST on 29 March (01:00Z),
	 * 03:00 CEST -> 02:00 CET on 25 October (01:00Z) */
	const char *B = "Europe/Berlin";
	/* a wall-clock time the jump skips: at the jump, once */
	expect_next("30 2 * * *", B, "2026-03-28T12:00:00.000Z", "2026-03-29T01:00:00.000Z");
	expect_next("30 2 * * *", B, "2026-03-29T01:00:00.000Z", "2026-03-30T00:30:00.000Z");
	expect_next("*/15 2 * * *", B, "2026-03-28T12:00:00.000Z", "2026-03-29T01:00:00.000Z");
	expect_next("*/15 2 * * *", B, "2026-03-29T01:00:00.000Z", "2026-03-30T00:00:00.000Z");
	expect_next("0 3 * * *", B, "2026-03-28T12:00:00.000Z", "2026-03-29T01:00:00.000Z");
	expect_next("0 3 * * *", B, "2026-03-29T01:00:00.000Z", "2026-03-30T01:00:00.000Z");
	/* a wall-clock time the fall-back repeats: the first pass only */
	expect_next("30 2 * * *", B, "2026-10-24T12:00:00.000Z", "2026-10-25T00:30:00.000Z");
	expect_next("30 2 * * *", B, "2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z");
	/* real time: the skipped hour has no tick, the repeated one two */
	expect_next("30 * * * *", B, "2026-03-29T00:30:00.000Z", "2026-03-29T01:30:00.000Z");
	expect_next("30 * * * *", B, "2026-10-24T23:30:00.000Z", "2026-10-25T00:30:00.000Z");
	expect_next("30 * * * *", B, "2026-10-25T00:30:00.000Z", "2026-10-25T01:30:00.000Z");
	expect_next("30 * * * *", B, "2026-10-25T01:30:00.000Z", "2026-10-25T02:30:00.000Z");
	/* New York: 1:00 repeats on 1 November 2026 (05:00Z EDT, 06:00Z EST) */
	expect_next("0 1 * * *", "America/New_York", "2026-10-31T12:00:00.000Z",
		    "2026-11-01T05:00:00.000Z");
	expect_next("0 1 * * *", "America/New_York", "2026-11-01T05:00:00.000Z",
		    "2026-11-02T06:00:00.000Z");
	/* Lord Howe's half-hour jump: 02:00 -> 02:30 on 4 October 2026 */
	expect_next("15 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00.000Z",
		    "2026-10-03T15:30:00.000Z");
	expect_next("45 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00.000Z",
		    "2026-10-03T15:45:00.000Z");
	/* Samoa skipped 30 December 2011: its 09:00 ticks at the jump */
	expect_next("0 9 * * *", "Pacific/Apia", "2011-12-29T19:00:00.000Z",
		    "2011-12-30T10:00:00.000Z");
	/* beyond the files' transitions: the footer's rule (2100: CEST) */
	expect_next("0 12 1 7 *", B, "2100-06-01T00:00:00.000Z", "2100-07-01T10:00:00.000Z");
}

/* The model: a local time L ticks at the first instant whose local time is
 * at least L (wall clock), or at every instant whose local time is L (real
 * time); searched over whole minutes. */
static int cron_matches(const aw_cron *c, int64_t L)
{
	int64_t day = aw_floordiv(L, 86400), y;
	int mo, d, h = (int)((L - day * 86400) / 3600), mi = (int)((L - day * 86400) / 60 % 60);
	aw_civil_from_days(day, &y, &mo, &d);
	int dom = c->days >> d & 1, dow = c->weekdays >> aw_weekday(day) & 1;
	int dm = c->dom_star || c->dow_star ? dom && dow : dom || dow;
	return (c->months >> mo & 1) && dm && (c->hours >> h & 1) && (c->minutes >> mi & 1);
}

static int model_ticks(const aw_cron *c, const aw_tz *tz, int64_t from, int64_t to, int64_t *out,
		       int cap)
{
	int32_t omin, omax;
	aw_tz_range(tz, &omin, &omax);
	int real_time = c->hours == 0xFFFFFF, n = 0;
	int64_t t0 = aw_floordiv(from - 86400, 60) * 60, t1 = to + 86400;
	int nt = (int)((t1 - t0) / 60) + 1;
	int64_t *pm = malloc(sizeof *pm * (size_t)nt), mx = INT64_MIN;
	for (int i = 0; i < nt; i++) {
		int64_t t = t0 + 60LL * i, lt = t + aw_tz_offset(tz, t);
		if (real_time && cron_matches(c, lt) && t > from && t <= to && n < cap)
			out[n++] = t;
		mx = lt > mx ? lt : mx;
		pm[i] = mx; /* the latest local time reached by t */
	}
	for (int64_t L = aw_floordiv(from + omin, 60) * 60; !real_time && L <= to + omax; L += 60) {
		if (!cron_matches(c, L))
			continue;
		int lo = 0, hi = nt; /* the first i with pm[i] >= L */
		while (lo < hi) {
			int mid = (lo + hi) / 2;
			if (pm[mid] >= L)
				hi = mid;
			else
				lo = mid + 1;
		}
		int64_t t = t0 + 60LL * lo;
		if (lo < nt && t > from && t <= to && n < cap && (n == 0 || out[n - 1] != t))
			out[n++] = t;
	}
	free(pm);
	return n;
}

static void test_next_against_model(void **state)
{
	const char *exprs[] = {"* * * * *",	  "30 2 * * *", "*/15 * * * *", "0 1,2,3 * * *",
			       "*/20 2 * * *",	  "0 * * * *",	"45 1-3 * * *", "0,30 0-3 * * *",
			       "59 23 * * *",	  "0 0 * * *",	"10 */2 * * *", "0 2 * * SUN",
			       "*/7 0-4 1-31 * *"};
	/* each zone's transitions in 2026 (and Samoa's lost day) */
	int64_t from_s = 1767225600LL - 86400; /* 2026-01-01 */
	int64_t to_s = 1767225600LL + 366LL * 86400;
	int64_t *want = malloc(sizeof *want * 8000);
	long compared = 0, windows = 0;
	for (size_t z = 0; z < sizeof ZONES / sizeof ZONES[0]; z++) {
		aw_tz *tz = NULL;
		assert_int_equal(aw_tz_load(ZONES[z], &tz, NULL), AW_OK);
		/* windows of two days around each change of offset this year */
		int32_t prev = aw_tz_offset(tz, from_s);
		for (int64_t t = from_s; t < to_s; t += 1800) {
			int32_t o = aw_tz_offset(tz, t);
			if (o == prev)
				continue;
			prev = o;
			int64_t w0 = t - 86400, w1 = t + 86400;
			windows++;
			for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++) {
				aw_cron c = parse_ok(exprs[e]);
				int n = model_ticks(&c, tz, w0, w1, want, 8000);
				int64_t at = w0 * 1000, got;
				for (int i = 0; i < n; i++) {
					if (aw_cron_next(&c, tz, at, &got) || got != want[i] * 1000)
						fail_msg(
							"%s, '%s', tick %d after %lld: %lld, model "
							"%lld",
							ZONES[z], exprs[e], i, (long long)at,
							(long long)got / 1000, (long long)want[i]);
					at = got;
					compared++;
				}
				if (!aw_cron_next(&c, tz, at, &got) && got <= w1 * 1000)
					fail_msg("%s, '%s': a tick %lld the model has not",
						 ZONES[z], exprs[e], (long long)got / 1000);
			}
		}
		aw_tz_free(tz);
	}
	free(want);
	/* 14 zones change in 2026, most twice; Apia, Kolkata, GMT-14 do not */
	assert_true(windows >= 24);
	assert_true(compared > 24 * 2000);
	print_message("%ld windows, %ld ticks as the model says\n", windows, compared);
}

static void test_tzif_refusals(void **state)
{
	/* a minimal version 2 file: one type (+1 h), no transitions, footer */
	unsigned char f[200];
	size_t n = 0;
	for (int part = 0; part < 2; part++) {
		memcpy(f + n, "TZif2", 5);
		memset(f + n + 5, 0, 15);
		unsigned char cnt[24] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 4};
		memcpy(f + n + 20, cnt, 24);
		n += 44;
		unsigned char ty[6] = {0, 0, 0x0e, 0x10, 0, 0};
		memcpy(f + n, ty, 6);
		n += 6;
		memcpy(f + n, "CET", 4);
		n += 4;
	}
	memcpy(f + n, "\nCET-1\n", 7);
	n += 7;
	aw_tz *tz = NULL;
	aw_error err = {0};
	assert_int_equal(aw_tz_parse(f, n, &tz, &err), AW_OK);
	assert_int_equal(aw_tz_offset(tz, 0), 3600);
	aw_tz_free(tz);
	/* every cut of it is refused, never read past */
	for (size_t k = 0; k < n; k++) {
		unsigned char *cut = malloc(k ? k : 1);
		memcpy(cut, f, k);
		if (aw_tz_parse(cut, k, &tz, NULL) != AW_E_CRON_ZONE)
			fail_msg("a cut at %zu of %zu bytes parsed", k, n);
		free(cut);
	}
	f[n - 2] = 'x'; /* the footer "CET-x" */
	assert_int_equal(aw_tz_parse(f, n, &tz, NULL), AW_E_CRON_ZONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_aliases),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_posix),
		cmocka_unit_test(test_against_glibc),
		cmocka_unit_test(test_next_utc),
		cmocka_unit_test(test_next_dst),
		cmocka_unit_test(test_next_against_model),
		cmocka_unit_test(test_tzif_refusals),
	};
	return cmocka_run_group_tests_name("cron", tests, NULL, NULL);
}
