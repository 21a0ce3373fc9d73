/*
 * redact_hook.h - the redaction engine's internal entry points (not a public
 * header):
 * - redact_test_force_scalar(1) makes the shape scanner build its byte
 *   masks with the portable scalar loop that non-x86 targets use, so a test on
 *   x86 can prove both paths give the same output;
 * - redact_hs_serialize() gives the compiled Hyperscan database as bytes
 *   (malloc'd, free()) for tools/gen_hsdb, which embeds it in the binaries as
 *   aw_redact_hsdb / aw_redact_hsdb_len so a start does not compile it.
 */
#ifndef AWOOOP_REDACT_HOOK_H
#define AWOOOP_REDACT_HOOK_H

#include <stddef.h>

#include "awooop/redact.h"

void redact_test_force_scalar(int on);
int redact_hs_serialize(char **out, size_t *len); /* 0 ok, -1 failed */
/* For bench/redact's naive baseline, built from the same definitions: a
 * class's exact PCRE2 pattern, and 1 if the part it matched passes the class
 * validator (Luhn, issuers, ...). */
const char *redact_pcre_pattern(aw_redact_class c);
int redact_validate(aw_redact_class c, const char *s, size_t len);
/* The base62 CRC32 that ends GitHub's and npm's 40-character tokens, of the
 * n characters of body, into out (6 characters and a NUL); for tests that
 * generate such tokens. */
void redact_base62_crc(const char *body, size_t n, char out[7]);

#endif
