/*
 * bounds.h - a per-project bound the platform sets: a default and overrides,
 * written "N" or "N,project=M,project=M" (a --mcp-project-workers or
 * --llm-project-inflight value). Tenants never set their own.
 */
#ifndef AWOOOP_BOUNDS_H
#define AWOOOP_BOUNDS_H

#include "awooop/ctx.h"
#include "awooop/err.h"

#define AW_BOUNDS_MAX 64 /* overrides */

typedef struct {
	long def; /* 0: no bound */
	int n;
	struct {
		char project[AW_PROJECT_MAX + 1];
		long v;
	} o[AW_BOUNDS_MAX];
} aw_bounds;

/* Parses spec (NULL or "": def_value, no overrides); each number in lo..hi.
 * AW_E_CONFIG naming `what` when it is not of that form. Pure (fuzzed). */
aw_err aw_bounds_parse(const char *spec, long def_value, long lo, long hi, const char *what,
		       aw_bounds *out, aw_error *err);
/* The bound of project: its override, else the default. */
long aw_bounds_of(const aw_bounds *b, const char *project);

#endif
