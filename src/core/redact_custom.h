/*
 * redact_custom.h - the engine's side of a project's custom patterns (not a
 * public header): redact.c looks a project's set up once per call, and runs
 * it over each text after the built-in classes, inside one budget per call.
 */
#ifndef AWOOOP_REDACT_CUSTOM_H
#define AWOOOP_REDACT_CUSTOM_H

#include <stddef.h>
#include <stdint.h>

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

#include "awooop/redact.h"

/* One call's use of a set (a text, a JSON document, a stream flush): the
 * budget is shared by every string of the call. Zero it, then set `set`. */
typedef struct {
	aw_redact_custom *set; /* a reference (rc_release) or NULL */
	uint64_t bytes;	       /* scanned so far (the budget grows with it) */
	int64_t mono0;	       /* first scan's monotonic time, 0 = not yet */
	int64_t cpu0, cpu_at;  /* the CPU clock's base and when it was last read */
	int cpu_marked;
	int stopped;   /* the budget was spent: no more custom matching */
	int limited;   /* patterns stopped in this call (limits or budget) */
	int idx_limit; /* a pattern stopped by its limits in the current text */
} aw_rc_run;

/* The project's set (a new reference; NULL when it has none). */
aw_redact_custom *rc_lookup(const char *project);
void rc_release(aw_redact_custom *c);
/* The name of pattern i of c. */
const char *rc_name(const aw_redact_custom *c, int i);

/* A match [start, end) of pattern i; 0 to go on, non-zero to stop (OOM). */
typedef int (*rc_emit)(void *ud, size_t start, size_t end, int i);
/* Runs every pattern of run->set over buf. md: a match data of at least one
 * pair; mc: a match context the call may change (the offset limit). */
int rc_scan(aw_rc_run *run, const char *buf, size_t len, pcre2_match_data *md,
	    pcre2_match_context *mc, rc_emit emit, void *ud);
/* Ends a call: counts what was stopped (metric by project) into stats. */
void rc_finish(aw_rc_run *run, const char *project, aw_redact_stats *stats);
/* A match context with the custom limits set (the caller frees it). */
pcre2_match_context *rc_match_context(void);

#endif
