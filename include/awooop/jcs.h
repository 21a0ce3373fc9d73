/*
 * jcs.h - RFC 8785 JSON Canonicalization Scheme: members sorted by UTF-16 code
 * units, no whitespace, minimal string escapes, numbers in ECMAScript
 * Number-to-string form. Two documents that differ only in key order,
 * whitespace or number spelling (1.0 vs 1, 1e2 vs 100) canonicalise alike.
 */
#ifndef AWOOOP_JCS_H
#define AWOOOP_JCS_H

#include <jansson.h>

/* malloc'd canonical text, or NULL on out of memory. */
char *aw_jcs(const json_t *v);
/* SHA-256 (lowercase hex, 65 bytes with NUL) of aw_jcs(v); -1 on OOM. */
int aw_jcs_sha256(const json_t *v, char *hex);

#endif
