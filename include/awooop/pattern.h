/*
 * pattern.h - a tenant's regular expression (a channel rule's "match"), the
 * one place a string from outside becomes a pattern. PCRE2 (UTF), compiled
 * once when the revision that holds it is written, matched with limits on
 * backtracking, recursion depth and heap: no pattern can crash the process
 * or hold a thread (glibc's regcomp crashed on "(|)(\\1\\1)*"). Back
 * references and callouts are refused outright.
 */
#ifndef AWOOOP_PATTERN_H
#define AWOOOP_PATTERN_H

#include <stddef.h>

#include "awooop/err.h"

#define AW_PATTERN_MAX 200 /* bytes of a pattern */
/* The limits of every match of a tenant's pattern, here and in JSON Schema
 * "pattern"/"patternProperties" (schema.c: a client's response_format, a
 * tool's input schema): backtracking steps, nesting depth, heap KiB. */
#define AW_PATTERN_MATCH_LIMIT 100000
#define AW_PATTERN_DEPTH_LIMIT 1000
#define AW_PATTERN_HEAP_KB 1024

typedef struct aw_pattern aw_pattern;

/* Compiles src; *out is the caller's (aw_pattern_free). AW_E_REQ_INVALID with
 * the reason (never the matched text) when it is not a pattern we run. */
aw_err aw_pattern_compile(const char *src, aw_pattern **out, aw_error *err);
/* 1 when text (len bytes, UTF-8) matches anywhere, 0 when it does not, -1
 * when a limit ended the match (counts as no match; the caller logs it). */
int aw_pattern_match(const aw_pattern *p, const char *text, size_t len);
void aw_pattern_free(aw_pattern *p);
/* Checks that src compiles (aw_pattern_compile without keeping it). Pure. */
aw_err aw_pattern_check(const char *src, aw_error *err);

#endif
