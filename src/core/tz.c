/*
 * tz.c - time zones from TZif files (RFC 8536) and POSIX TZ strings, and the
 * civil calendar (see tz.h).
 *
 * A zone is its transitions (ascending instants, each naming a local time
 * type) and the types' offsets, plus the footer's POSIX rule for instants at
 * or after the last transition (a "slim" file has no transitions past the
 * rule's start at all; a "fat" one has them to 2037). Before the first
 * transition type 0 holds. Only offsets are kept: abbreviations and the
 * standard/UT indicators do not move an instant.
 *
 * The parser reads outside bytes: every count is bounded before anything is
 * allocated, every read is checked against the end, transitions must
 * ascend, offsets stay within RFC 8536's range, so nothing downstream can
 * overflow. The file name is checked (aw_tz_name_ok) before a path is built,
 * and only a regular file of at most AW_TZIF_MAX bytes is read.
 */
#include "awooop/alloc.h"
#include "awooop/tz.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_TRANS 20000
#define MAX_OFF 93599 /* RFC 8536: utoff within [-89999, 93599] */
#define MIN_OFF (-89999)
#define MAX_T (INT64_C(1) << 60) /* transition times beyond are refused */

typedef struct {
	char kind;    /* 'J' (1..365, no Feb 29), 'D' (0..365), 'M' (month.week.day) */
	int a, b, c;  /* J/D: a = day; M: a = month, b = week 1..5, c = weekday 0..6 */
	int32_t time; /* seconds after local midnight: -167 h .. 167 h */
} rule_date;

typedef struct {
	int32_t std_off, dst_off; /* seconds east of UTC */
	int has_dst;
	rule_date start, end;
} posix_rule;

struct aw_tz {
	int64_t *trans;
	uint8_t *idx;
	int ntrans;
	int32_t *types; /* offsets of the local time types */
	int ntypes;
	int has_rule;
	posix_rule rule;
	int32_t min_off, max_off;
};

/* ---- the civil calendar ---- */

int64_t aw_days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;				       /* 0..399 */
	int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* 0..365 */
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;	       /* 0..146096 */
	return era * 146097 + doe - 719468;
}

void aw_civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

int aw_weekday(int64_t days)
{
	return (int)((days % 7 + 7 + 4) % 7); /* 1970-01-01 was a Thursday */
}

static int leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int aw_month_days(int64_t y, int m)
{
	static const int n[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	return m == 2 && leap(y) ? 29 : n[(m - 1) % 12];
}

/* ---- POSIX TZ rules ---- */

/* The day (since the epoch) a rule date falls on in year y. */
static int64_t rule_day(const rule_date *r, int64_t y)
{
	int64_t jan1 = aw_days_from_civil(y, 1, 1);
	if (r->kind == 'J')
		return jan1 + r->a - 1 + (leap(y) && r->a >= 60);
	if (r->kind == 'D')
		return jan1 + r->a;
	int64_t first = aw_days_from_civil(y, r->a, 1);
	int day = (r->c - aw_weekday(first) + 7) % 7 + (r->b - 1) * 7;
	while (day >= aw_month_days(y, r->a))
		day -= 7; /* week 5: the last such weekday */
	return first + day;
}

static int32_t rule_offset(const posix_rule *r, int64_t t)
{
	if (!r->has_dst)
		return r->std_off;
	int64_t y;
	int m, d;
	aw_civil_from_days(aw_floordiv(t + r->std_off, 86400), &y, &m, &d);
	int64_t start = rule_day(&r->start, y) * 86400 + r->start.time - r->std_off;
	int64_t end = rule_day(&r->end, y) * 86400 + r->end.time - r->dst_off;
	int dst = start < end ? t >= start && t < end : !(t >= end && t < start);
	return dst ? r->dst_off : r->std_off;
}

typedef struct {
	const char *p, *end;
} cur;

static int more(const cur *c)
{
	return c->p < c->end;
}

/* An abbreviation: 3+ letters, or <3+ of [A-Za-z0-9+-]>. */
static int p_name(cur *c)
{
	const char *s = c->p;
	if (more(c) && *c->p == '<') {
		c->p++;
		while (more(c) && (isalnum((unsigned char)*c->p) || *c->p == '+' || *c->p == '-'))
			c->p++;
		if (!more(c) || *c->p != '>' || c->p - s - 1 < 3)
			return -1;
		c->p++;
		return 0;
	}
	while (more(c) && isalpha((unsigned char)*c->p))
		c->p++;
	return c->p - s >= 3 ? 0 : -1;
}

/* An unsigned number of 1..digits digits in lo..hi. */
static int p_num(cur *c, int digits, int lo, int hi, int *out)
{
	int v = 0, n = 0;
	while (more(c) && isdigit((unsigned char)*c->p) && n < digits) {
		v = v * 10 + (*c->p++ - '0');
		n++;
	}
	if (!n || (more(c) && isdigit((unsigned char)*c->p)) || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* [+-]hh[:mm[:ss]], hours up to maxh. */
static int p_hms(cur *c, int maxh, int32_t *out)
{
	int sign = 1, h = 0, m = 0, s = 0;
	if (more(c) && (*c->p == '+' || *c->p == '-'))
		sign = *c->p++ == '-' ? -1 : 1;
	if (p_num(c, 3, 0, maxh, &h))
		return -1;
	if (more(c) && *c->p == ':') {
		c->p++;
		if (p_num(c, 2, 0, 59, &m))
			return -1;
		if (more(c) && *c->p == ':') {
			c->p++;
			if (p_num(c, 2, 0, 59, &s))
				return -1;
		}
	}
	*out = sign * (h * 3600 + m * 60 + s);
	return 0;
}

static int p_date(cur *c, rule_date *r)
{
	r->time = 7200; /* 02:00 unless said */
	if (more(c) && *c->p == 'J') {
		c->p++;
		r->kind = 'J';
		if (p_num(c, 3, 1, 365, &r->a))
			return -1;
	} else if (more(c) && *c->p == 'M') {
		c->p++;
		r->kind = 'M';
		if (p_num(c, 2, 1, 12, &r->a) || !more(c) || *c->p++ != '.' ||
		    p_num(c, 1, 1, 5, &r->b) || !more(c) || *c->p++ != '.' ||
		    p_num(c, 1, 0, 6, &r->c))
			return -1;
	} else {
		r->kind = 'D';
		if (p_num(c, 3, 0, 365, &r->a))
			return -1;
	}
	if (more(c) && *c->p == '/') {
		c->p++;
		if (p_hms(c, 167, &r->time))
			return -1;
	}
	return 0;
}

/* The whole of a POSIX TZ string into r. */
static int p_rule(const char *s, size_t len, posix_rule *r)
{
	cur c = {s, s + len};
	int32_t v;
	memset(r, 0, sizeof *r);
	if (p_name(&c) || p_hms(&c, 24, &v))
		return -1;
	r->std_off = -v; /* POSIX counts west of Greenwich */
	if (!more(&c))
		return 0;
	if (p_name(&c))
		return -1;
	r->has_dst = 1;
	r->dst_off = r->std_off + 3600;
	if (more(&c) && *c.p != ',') {
		if (p_hms(&c, 24, &v))
			return -1;
		r->dst_off = -v;
	}
	if (!more(&c)) { /* no rule given: POSIX leaves it to us; the US one */
		r->start = (rule_date){'M', 3, 2, 0, 7200};
		r->end = (rule_date){'M', 11, 1, 0, 7200};
		return 0;
	}
	if (*c.p++ != ',' || p_date(&c, &r->start) || !more(&c) || *c.p++ != ',' ||
	    p_date(&c, &r->end) || more(&c))
		return -1;
	return 0;
}

static int off_ok(int32_t o)
{
	return o >= MIN_OFF && o <= MAX_OFF;
}

static void set_range(aw_tz *tz)
{
	int first = 1;
	for (int i = 0; i < tz->ntypes; i++) {
		if (first || tz->types[i] < tz->min_off)
			tz->min_off = tz->types[i];
		if (first || tz->types[i] > tz->max_off)
			tz->max_off = tz->types[i];
		first = 0;
	}
	if (tz->has_rule) {
		int32_t o[2] = {tz->rule.std_off,
				tz->rule.has_dst ? tz->rule.dst_off : tz->rule.std_off};
		for (int i = 0; i < 2; i++) {
			if (first || o[i] < tz->min_off)
				tz->min_off = o[i];
			if (first || o[i] > tz->max_off)
				tz->max_off = o[i];
			first = 0;
		}
	}
}

aw_err aw_tz_posix(const char *spec, size_t len, aw_tz **out, aw_error *err)
{
	*out = NULL;
	posix_rule r;
	if (len > AW_TZ_POSIX_MAX || p_rule(spec, len, &r) || !off_ok(r.std_off) ||
	    (r.has_dst && !off_ok(r.dst_off)))
		return aw_fail(err, AW_E_CRON_ZONE, "not a POSIX TZ string");
	aw_tz *tz = aw_calloc(1, sizeof *tz);
	if (!tz)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	tz->has_rule = 1;
	tz->rule = r;
	set_range(tz);
	*out = tz;
	return AW_OK;
}

void aw_tz_free(aw_tz *tz)
{
	if (!tz)
		return;
	free(tz->trans);
	free(tz->idx);
	free(tz->types);
	free(tz);
}

/* ---- TZif ---- */

typedef struct {
	const unsigned char *p;
	size_t n, o;
} rd;

static const unsigned char *take(rd *r, size_t k)
{
	if (r->n - r->o < k)
		return NULL;
	const unsigned char *p = r->p + r->o;
	r->o += k;
	return p;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
	return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

typedef struct {
	int version;
	uint32_t isut, isstd, leap, time, type, chars;
} hdr;

static int header(rd *r, hdr *h)
{
	const unsigned char *p = take(r, 44);
	if (!p || memcmp(p, "TZif", 4) != 0)
		return -1;
	h->version = p[4] == 0 ? 1 : p[4] >= '2' && p[4] <= '9' ? p[4] - '0' : -1;
	h->isut = be32(p + 20);
	h->isstd = be32(p + 24);
	h->leap = be32(p + 28);
	h->time = be32(p + 32);
	h->type = be32(p + 36);
	h->chars = be32(p + 40);
	if (h->version < 0 || h->type < 1 || h->type > 256 || h->chars < 1 ||
	    h->chars > AW_TZIF_MAX || h->time > MAX_TRANS || h->leap > MAX_TRANS ||
	    (h->isut && h->isut != h->type) || (h->isstd && h->isstd != h->type))
		return -1;
	return 0;
}

static size_t block_size(const hdr *h, size_t tsz)
{
	return h->time * tsz + h->time + h->type * 6 + h->chars + h->leap * (tsz + 4) + h->isstd +
	       h->isut;
}

static aw_err zone_bad(const char *why, aw_error *err)
{
	return aw_fail(err, AW_E_CRON_ZONE, "not a usable TZif file: %s", why);
}

/* The data block of h with times of tsz bytes into tz. */
static aw_err block(rd *r, const hdr *h, size_t tsz, aw_tz *tz, aw_error *err)
{
	if (r->n - r->o < block_size(h, tsz))
		return zone_bad("truncated", err);
	if (h->leap)
		return zone_bad("leap-second zones (right/) are not supported", err);
	tz->ntrans = (int)h->time;
	tz->ntypes = (int)h->type;
	tz->trans = aw_calloc(h->time + 1, sizeof *tz->trans);
	tz->idx = aw_calloc(h->time + 1, 1);
	tz->types = aw_calloc(h->type, sizeof *tz->types);
	if (!tz->trans || !tz->idx || !tz->types) {
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	const unsigned char *t = take(r, h->time * tsz), *ix = take(r, h->time),
			    *ty = take(r, h->type * 6);
	for (uint32_t i = 0; i < h->time; i++) {
		int64_t v = tsz == 8 ? be64(t + 8 * i) : (int32_t)be32(t + 4 * i);
		if (v <= -MAX_T || v >= MAX_T)
			return zone_bad("a transition out of range", err);
		if (i && v <= tz->trans[i - 1])
			return zone_bad("transitions out of order", err);
		if (ix[i] >= h->type)
			return zone_bad("a transition names no type", err);
		tz->trans[i] = v;
		tz->idx[i] = ix[i];
	}
	for (uint32_t i = 0; i < h->type; i++) {
		int32_t o = (int32_t)be32(ty + 6 * i);
		if (!off_ok(o) || ty[6 * i + 4] > 1 || ty[6 * i + 5] >= h->chars)
			return zone_bad("a local time type out of range", err);
		tz->types[i] = o;
	}
	take(r, h->chars + h->leap * (tsz + 4) + h->isstd + h->isut);
	return AW_OK;
}

aw_err aw_tz_parse(const unsigned char *data, size_t len, aw_tz **out, aw_error *err)
{
	*out = NULL;
	if (len > AW_TZIF_MAX)
		return aw_fail(err, AW_E_CRON_ZONE, "not a usable TZif file: too large");
	rd r = {data, len, 0};
	hdr h;
	if (header(&r, &h))
		return aw_fail(err, AW_E_CRON_ZONE, "not a usable TZif file: bad header");
	aw_tz *tz = aw_calloc(1, sizeof *tz);
	if (!tz)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	aw_err bad = AW_OK;
	if (h.version == 1) {
		bad = block(&r, &h, 4, tz, err);
	} else { /* the 32-bit block is a copy for old readers: skip it */
		hdr h2;
		if (r.n - r.o < block_size(&h, 4)) {
			bad = zone_bad("truncated", err);
		} else {
			take(&r, block_size(&h, 4));
			if (header(&r, &h2) || h2.version != h.version)
				bad = zone_bad("bad second header", err);
			else
				bad = block(&r, &h2, 8, tz, err);
		}
		const unsigned char *nl = bad ? NULL : take(&r, 1);
		/* the footer: "\n" POSIX-TZ "\n", the end of the file */
		if (!bad && (!nl || *nl != '\n'))
			bad = zone_bad("no footer", err);
		if (!bad) {
			const unsigned char *f = r.p + r.o;
			size_t k = 0;
			while (r.o + k < r.n && f[k] != '\n')
				k++;
			if (r.o + k >= r.n || r.o + k + 1 != r.n)
				bad = zone_bad("footer not closed", err);
			else if (k &&
				 (k > AW_TZ_POSIX_MAX || p_rule((const char *)f, k, &tz->rule) ||
				  !off_ok(tz->rule.std_off) ||
				  (tz->rule.has_dst && !off_ok(tz->rule.dst_off))))
				bad = zone_bad("footer is not a POSIX TZ string", err);
			else
				tz->has_rule = k > 0;
		}
	}
	if (bad) {
		aw_tz_free(tz);
		return bad;
	}
	set_range(tz);
	*out = tz;
	return AW_OK;
}

int32_t aw_tz_offset(const aw_tz *tz, int64_t t)
{
	int n = tz->ntrans;
	if (tz->has_rule && (n == 0 || t >= tz->trans[n - 1]))
		return rule_offset(&tz->rule, t);
	if (n == 0 || t < tz->trans[0])
		return tz->types[0];
	int lo = 0, hi = n - 1; /* the last transition at or before t */
	while (lo < hi) {
		int mid = lo + (hi - lo + 1) / 2;
		if (tz->trans[mid] <= t)
			lo = mid;
		else
			hi = mid - 1;
	}
	return tz->types[tz->idx[lo]];
}

void aw_tz_range(const aw_tz *tz, int32_t *min, int32_t *max)
{
	*min = tz->min_off;
	*max = tz->max_off;
}

/* ---- names and files ---- */

int aw_tz_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n < 1 || n > AW_TZ_NAME_MAX)
		return 0;
	int start = 1;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)name[i];
		if (ch == '/') {
			if (start)
				return 0; /* leading '/' or an empty component */
			start = 1;
		} else if (start) {
			if (!isalnum(ch))
				return 0;
			start = 0;
		} else if (!isalnum(ch) && ch != '_' && ch != '+' && ch != '-') {
			return 0;
		}
	}
	return !start;
}

aw_err aw_tz_load(const char *name, aw_tz **out, aw_error *err)
{
	*out = NULL;
	if (!aw_tz_name_ok(name))
		return aw_fail(err, AW_E_CRON_ZONE,
			       "a time zone is an IANA name such as Europe/Berlin or UTC");
	if (strcmp(name, "UTC") == 0)
		return aw_tz_posix("UTC0", 4, out, err);
	if (strncmp(name, "right/", 6) == 0)
		return aw_fail(err, AW_E_CRON_ZONE,
			       "time zone %s: leap-second zones are not supported", name);
	char path[sizeof AW_TZ_DIR + AW_TZ_NAME_MAX + 2];
	snprintf(path, sizeof path, "%s/%s", AW_TZ_DIR, name);
	/* O_NONBLOCK: a FIFO planted in the directory cannot hold us */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return aw_fail(err, AW_E_CRON_ZONE,
			       errno == ENOENT || errno == ENOTDIR
				       ? "unknown time zone %s (an IANA name such as Europe/Berlin)"
				       : "time zone %s cannot be read",
			       name);
	struct stat st;
	unsigned char *buf = NULL;
	aw_err e = AW_OK;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > AW_TZIF_MAX ||
	    st.st_size < 44) {
		e = aw_fail(err, AW_E_CRON_ZONE, "unknown time zone %s", name);
		goto out;
	}
	size_t len = (size_t)st.st_size, got = 0;
	if (!(buf = aw_malloc(len))) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
		goto out;
	}
	while (got < len) {
		ssize_t k = read(fd, buf + got, len - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	if (got != len) {
		e = aw_fail(err, AW_E_CRON_ZONE, "time zone %s cannot be read", name);
		goto out;
	}
	aw_error perr = {0};
	if ((e = aw_tz_parse(buf, len, out, &perr)))
		aw_fail(err, e, "time zone %s: %s", name, perr.msg);
out:
	free(buf);
	close(fd);
	return e;
}
