/*
 * tz.h - IANA time zones without TZ: a zone's offset from UTC at any instant,
 * read from the system's zoneinfo files (TZif, RFC 8536: version 1 to 4, the
 * 64-bit data and the POSIX TZ footer that carries the rule past the last
 * transition) by a parser of our own. localtime_r with setenv("TZ") changes
 * the whole process and is not thread-safe; a loaded zone here is a plain
 * value any thread may read.
 *
 * Civil-calendar helpers (proleptic Gregorian, days since 1970-01-01) live
 * here too; the cron module builds on them.
 *
 * Ownership: aw_tz_load / aw_tz_parse / aw_tz_posix give a zone freed with
 * aw_tz_free. Loaded zones are immutable: share them between threads freely.
 */
#ifndef AWOOOP_TZ_H
#define AWOOOP_TZ_H

#include <stddef.h>
#include <stdint.h>

#include "awooop/err.h"

#define AW_TZ_NAME_MAX 64
#define AW_TZ_DIR "/usr/share/zoneinfo"
#define AW_TZIF_MAX (256 * 1024) /* bytes of a TZif file (real ones: < 4 KiB) */
#define AW_TZ_POSIX_MAX 128	 /* bytes of a POSIX TZ string */

typedef struct aw_tz aw_tz;

/* 1 when name can name a zone: 1..AW_TZ_NAME_MAX bytes of '/'-separated
 * components, each [A-Za-z0-9][A-Za-z0-9_+-]* ("Europe/Berlin",
 * "Etc/GMT+5"); nothing else reaches the file system (no '.', no leading
 * '/'). Pure. */
int aw_tz_name_ok(const char *name);
/* The zone name from AW_TZ_DIR ("UTC" needs no file). AW_E_CRON_ZONE naming
 * the zone when the name is malformed, there is no such zone, or its file
 * is not a TZif file this parser takes (leap-second "right/" zones are
 * refused: their clocks are not POSIX time). */
aw_err aw_tz_load(const char *name, aw_tz **out, aw_error *err);
/* A zone from the bytes of a TZif file. AW_E_CRON_ZONE when malformed.
 * Pure (fuzzed by fuzz/fuzz_tzif.c). */
aw_err aw_tz_parse(const unsigned char *data, size_t len, aw_tz **out, aw_error *err);
/* A zone from a POSIX TZ string of len bytes ("CET-1CEST,M3.5.0,M10.5.0/3",
 * "<+0530>-5:30", "UTC0"), with RFC 8536's extensions (hours up to 167 in
 * rule times, negative times). AW_E_CRON_ZONE when malformed. Pure. */
aw_err aw_tz_posix(const char *spec, size_t len, aw_tz **out, aw_error *err);
void aw_tz_free(aw_tz *tz);

/* Seconds east of UTC in effect at Unix time t (seconds). */
int32_t aw_tz_offset(const aw_tz *tz, int64_t t);
/* The smallest and largest offset the zone ever uses: every instant whose
 * local time is L lies within [L - max, L - min]. */
void aw_tz_range(const aw_tz *tz, int32_t *min, int32_t *max);

/* ---- the civil calendar (proleptic Gregorian) ---- */
/* Days since 1970-01-01 of y-m-d (m 1..12, d 1..31). */
int64_t aw_days_from_civil(int64_t y, int m, int d);
void aw_civil_from_days(int64_t days, int64_t *y, int *m, int *d);
/* 0 = Sunday .. 6 = Saturday. */
int aw_weekday(int64_t days);
int aw_month_days(int64_t y, int m);
/* floor(a / b) for b > 0. */
static inline int64_t aw_floordiv(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && a < 0);
}

#endif
