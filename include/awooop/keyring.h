/*
 * keyring.h - HMAC-SHA256 keys with ids and rotation: the keys that sign
 * published contract revisions, and (the same pattern, another ring) the keys
 * of approval tokens (approval.h).
 *
 * Each key has an id; exactly one is current and signs; every key in the ring
 * verifies, so retired keys keep old signatures valid after a rotation. Keys
 * come from AWOOOP_PUBLISH_KEYS ("kid:hex[,kid:hex...]", the first is current)
 * or a JSON file {"current": "kid", "keys": {"kid": "hex", ...}}. Secrets are
 * at least 32 bytes (64 hex characters) and never leave this module.
 */
#ifndef AWOOOP_KEYRING_H
#define AWOOOP_KEYRING_H

#include <stddef.h>

#include "awooop/err.h"

typedef struct aw_keyring aw_keyring;

aw_err aw_keyring_from_env(const char *spec, aw_keyring **out, aw_error *err);
aw_err aw_keyring_from_file(const char *path, aw_keyring **out, aw_error *err);
/* Writes a new file with one fresh key (mode 0600); fails if it exists. */
aw_err aw_keyring_create_file(const char *path, aw_error *err);
void aw_keyring_free(aw_keyring *k);
/* NULL when the ring is empty. */
const char *aw_keyring_current(const aw_keyring *k);
/* sig: 65 bytes of hex. AW_E_CONTRACT_NO_KEY without keys. */
aw_err aw_keyring_sign(const aw_keyring *k, const char *msg, size_t len, char *kid_out,
		       size_t kid_cap, char *sig, aw_error *err);
/* 1 when sig is the HMAC of msg under key kid (constant-time compare). */
int aw_keyring_verify(const aw_keyring *k, const char *kid, const char *msg, size_t len,
		      const char *sig);
/* The raw HMAC of msg under key kid (NULL: the current key); -1 when the ring
 * has no such key. */
int aw_keyring_hmac(const aw_keyring *k, const char *kid, const void *msg, size_t len,
		    unsigned char mac[32]);

#endif
