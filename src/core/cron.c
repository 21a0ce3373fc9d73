/*
 * cron.c - 5-field cron expressions: the parser and the next tick in a time
 * zone (see cron.h for the language and the DST rules).
 *
 * The parser reads a tenant's string: every number is at most three digits
 * and checked against its field before it becomes a bit, the expression is
 * bounded (AW_CRON_MAX), and an expression no date can match is refused
 * here rather than found out by the scheduler.
 *
 * aw_cron_next walks local calendar days from the local time of `after`, and
 * within a matching day its matching hours and minutes in order; each local
 * time L maps to the instants t with t + offset(t) = L, all of which lie in
 * [L - max, L - min] for the zone's offset range: so the walk may start at
 * after + min and may stop once L - max passes the best tick found. Two
 * probes at the ends of that window give the offsets before and after a
 * transition inside it (real zones never put two transitions within their
 * offset range of each other); a gap's jump is found by bisection.
 */
#include "awooop/cron.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define LIMIT_DAYS (146097 + 366) /* 400 years: the Gregorian cycle */

typedef struct {
	const char *name;
	int lo, hi;
	const char *const *names; /* names[i] is lo + i */
} field_def;

static const char *const MONTHS[] = {"jan", "feb", "mar", "apr", "may", "jun",
				     "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const DAYS[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun"};
static const field_def FIELDS[5] = {
	{"minute", 0, 59, NULL},  {"hour", 0, 23, NULL},       {"day-of-month", 1, 31, NULL},
	{"month", 1, 12, MONTHS}, {"day-of-week", 0, 7, DAYS},
};

static aw_err bad(aw_error *err, const field_def *f, const char *msg)
{
	return aw_fail(err, AW_E_CRON, "%s field: %s", f->name, msg);
}

/* One value of field f at *p: a number of 1..3 digits or a 3-letter name. */
static aw_err value(const char **p, const char *end, const field_def *f, int *out, int *named,
		    aw_error *err)
{
	*named = 0;
	const char *s = *p;
	char m[80];
	if (s < end && isdigit((unsigned char)*s)) {
		int v = 0, n = 0;
		while (s < end && isdigit((unsigned char)*s) && n < 4) {
			v = v * 10 + (*s++ - '0');
			n++;
		}
		if (n > 3)
			return bad(err, f, "a number of more than 3 digits");
		if (v < f->lo || v > f->hi) {
			snprintf(m, sizeof m, "%d is out of %d-%d", v, f->lo, f->hi);
			return bad(err, f, m);
		}
		*p = s;
		*out = v;
		return AW_OK;
	}
	if (f->names && end - s >= 3 && isalpha((unsigned char)s[0]) &&
	    !(end - s > 3 && isalpha((unsigned char)s[3]))) {
		for (int i = 0; i <= f->hi - f->lo; i++)
			if (strncasecmp(s, f->names[i], 3) == 0) {
				*p = s + 3;
				*out = f->lo + i;
				*named = 1;
				return AW_OK;
			}
	}
	const char *k = s;
	while (k < end && k - s < 12 && *k != ',' && *k != '-' && *k != '/')
		k++;
	int printable = 1;
	for (const char *q = s; q < k; q++)
		printable &= isprint((unsigned char)*q) != 0;
	if (k == s)
		return bad(err, f, "a value is missing");
	if (!printable)
		return bad(err, f, "a value that is not text");
	snprintf(m, sizeof m, "'%.*s' is not a value of this field", (int)(k - s), s);
	return bad(err, f, m);
}

/* The field f of [s, end) into *bits; *star when it begins with '*'. */
static aw_err field(const char *s, const char *end, const field_def *f, uint64_t *bits, int *star,
		    aw_error *err)
{
	*bits = 0;
	*star = s < end && *s == '*';
	const char *p = s;
	for (;;) {
		int lo, hi, step = 1, ranged = 0, named = 0;
		aw_err e;
		if (p < end && *p == '*') {
			p++;
			lo = f->lo;
			hi = f->names == DAYS ? 6 : f->hi; /* 7 is Sunday again */
			ranged = 1;
		} else {
			if ((e = value(&p, end, f, &lo, &named, err)))
				return e;
			hi = lo;
			if (p < end && *p == '-') {
				p++;
				if ((e = value(&p, end, f, &hi, &named, err)))
					return e;
				if (f->names == DAYS && named && hi == 0 && lo > 0)
					hi = 7; /* FRI-SUN */
				if (hi < lo) {
					char m[64];
					snprintf(m, sizeof m, "the range %d-%d runs backwards", lo,
						 hi);
					return bad(err, f, m);
				}
				ranged = 1;
			}
		}
		if (p < end && *p == '/') {
			p++;
			int n = 0;
			step = 0;
			while (p < end && isdigit((unsigned char)*p) && n < 3) {
				step = step * 10 + (*p++ - '0');
				n++;
			}
			int span = f->hi - f->lo + 1;
			if (!n || (p < end && isdigit((unsigned char)*p)) || step < 1 ||
			    step > span) {
				char m[64];
				snprintf(m, sizeof m, "a step is 1-%d", span);
				return bad(err, f, m);
			}
			if (!ranged) /* N/STEP: N to the end (Sunday as 7 ends at itself) */
				hi = f->names == DAYS && lo < 7 ? 6 : f->hi;
		}
		for (int v = lo; v <= hi; v += step)
			*bits |= (uint64_t)1 << (f->names == DAYS && v == 7 ? 0 : v);
		if (p == end)
			return AW_OK;
		if (*p != ',') {
			char m[64];
			if (isprint((unsigned char)*p))
				snprintf(m, sizeof m, "'%c' where ',' or the field's end belongs",
					 *p);
			else
				snprintf(m, sizeof m, "a byte that is not text");
			return bad(err, f, m);
		}
		p++;
		if (p == end)
			return bad(err, f, "a value is missing after ','");
	}
}

static const struct {
	const char *alias, *expr;
} ALIASES[] = {
	{"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
	{"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
	{"@hourly", "0 * * * *"},
};

aw_err aw_cron_parse(const char *expr, aw_cron *out, aw_error *err)
{
	memset(out, 0, sizeof *out);
	size_t len = strnlen(expr, AW_CRON_MAX + 1);
	if (len > AW_CRON_MAX)
		return aw_fail(err, AW_E_CRON, "a cron expression is at most %d bytes",
			       AW_CRON_MAX);
	const char *s = expr, *end = expr + len;
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (s < end && *s == '@') {
		for (size_t i = 0; i < sizeof ALIASES / sizeof ALIASES[0]; i++)
			if ((size_t)(end - s) == strlen(ALIASES[i].alias) &&
			    strncasecmp(s, ALIASES[i].alias, (size_t)(end - s)) == 0)
				return aw_cron_parse(ALIASES[i].expr, out, err);
		return aw_fail(err, AW_E_CRON,
			       "unknown alias: @yearly, @monthly, @weekly, @daily or @hourly"
			       " (no @reboot)");
	}
	uint64_t bits[5];
	int star[5], nf = 0;
	while (s < end) {
		const char *f = s;
		while (s < end && *s != ' ' && *s != '\t')
			s++;
		if (nf == 5)
			return aw_fail(err, AW_E_CRON,
				       "more than 5 fields: minute hour day-of-month month "
				       "day-of-week (no seconds, no year)");
		for (const char *q = f; q < s; q++)
			if (!isprint((unsigned char)*q))
				return aw_fail(err, AW_E_CRON, "%s field: a control byte",
					       FIELDS[nf].name);
		aw_err e = field(f, s, &FIELDS[nf], &bits[nf], &star[nf], err);
		if (e)
			return e;
		nf++;
		while (s < end && (*s == ' ' || *s == '\t'))
			s++;
	}
	if (nf != 5)
		return aw_fail(err, AW_E_CRON,
			       "%d field%s: a cron expression has 5 (minute hour day-of-month "
			       "month day-of-week)",
			       nf, nf == 1 ? "" : "s");
	out->minutes = bits[0];
	out->hours = (uint32_t)bits[1];
	out->days = (uint32_t)bits[2];
	out->months = (uint16_t)bits[3];
	out->weekdays = (uint8_t)bits[4];
	out->dom_star = star[2];
	out->dow_star = star[4];
	/* a day of the month is needed (not only a weekday): one must exist */
	if (out->dom_star || out->dow_star) {
		int ok = 0;
		for (int m = 1; m <= 12 && !ok; m++)
			for (int d = 1; d <= aw_month_days(2000, m) && !ok; d++)
				ok = (out->months >> m & 1) && (out->days >> d & 1);
		if (!ok)
			return aw_fail(err, AW_E_CRON,
				       "day-of-month field: no such day in the months given "
				       "(the expression never fires)");
	}
	return AW_OK;
}

static int day_matches(const aw_cron *c, int64_t day)
{
	int64_t y;
	int m, d;
	aw_civil_from_days(day, &y, &m, &d);
	if (!(c->months >> m & 1))
		return 0;
	int dom = c->days >> d & 1, dow = c->weekdays >> aw_weekday(day) & 1;
	return c->dom_star || c->dow_star ? dom && dow : dom || dow;
}

/* The ticks of local time L (seconds, as if UTC) into out (ascending): 0, 1
 * or 2 (see cron.h for real-time and wall-clock expressions). */
static int local_to_utc(const aw_tz *tz, int64_t L, int32_t omin, int32_t omax, int real_time,
			int64_t out[2])
{
	if (!tz || omin == omax) {
		out[0] = L - omin;
		return 1;
	}
	int32_t oa = aw_tz_offset(tz, L - omax), ob = aw_tz_offset(tz, L - omin);
	int n = 0;
	if (aw_tz_offset(tz, L - oa) == oa)
		out[n++] = L - oa;
	if (ob != oa && aw_tz_offset(tz, L - ob) == ob)
		out[n++] = L - ob;
	if (n == 2) {
		if (out[1] < out[0]) {
			int64_t x = out[0];
			out[0] = out[1];
			out[1] = x;
		}
		return real_time ? 2 : 1; /* a repeated time: the first pass */
	}
	if (n == 1 || real_time || ob <= oa)
		return n;
	/* a skipped time: the moment the clock jumps, the first instant in
	 * (L - ob, L - oa] with the later offset */
	int64_t lo = L - ob, hi = L - oa;
	if (aw_tz_offset(tz, lo) != oa || aw_tz_offset(tz, hi) == oa)
		return 0; /* not one transition: no tick rather than a guess */
	while (hi - lo > 1) {
		int64_t mid = lo + (hi - lo) / 2;
		if (aw_tz_offset(tz, mid) == oa)
			lo = mid;
		else
			hi = mid;
	}
	out[0] = hi;
	return 1;
}

int aw_cron_next(const aw_cron *c, const aw_tz *tz, int64_t after_ms, int64_t *out_ms)
{
	static const int64_t max_s = INT64_C(221845392000); /* 9000-01-01 */
	int32_t omin = 0, omax = 0;
	if (tz)
		aw_tz_range(tz, &omin, &omax);
	int64_t after = aw_floordiv(after_ms, 1000);
	if (after < -max_s || after > max_s)
		return -1;
	int64_t lstart = aw_floordiv(after + omin + 1 + 59, 60) * 60;
	int64_t best = INT64_MAX, day0 = aw_floordiv(lstart, 86400);
	int real_time = c->hours == 0xFFFFFF;
	for (int64_t day = day0; day < day0 + LIMIT_DAYS; day++) {
		if (best != INT64_MAX && day * 86400 - omax >= best)
			break;
		if (!day_matches(c, day))
			continue;
		for (int h = 0; h < 24; h++) {
			if (!(c->hours >> h & 1) || day * 86400 + h * 3600 + 3599 < lstart)
				continue;
			for (int m = 0; m < 60; m++) {
				if (!(c->minutes >> m & 1))
					continue;
				int64_t L = day * 86400 + h * 3600 + m * 60, t[2];
				if (L < lstart)
					continue;
				if (best != INT64_MAX && L - omax >= best)
					goto done;
				int n = local_to_utc(tz, L, omin, omax, real_time, t);
				for (int k = 0; k < n; k++)
					if (t[k] > after && t[k] < best)
						best = t[k];
			}
		}
	}
done:
	if (best == INT64_MAX || best >= max_s)
		return -1;
	*out_ms = best * 1000;
	return 0;
}
