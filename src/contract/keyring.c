/*
 * keyring.c - HMAC key rings: publish keys, approval-token keys (see keyring.h).
 */
#include "awooop/alloc.h"
#include "awooop/keyring.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "awooop/crypto.h"
#include "awooop/str.h"

#define MAX_KEYS 16

struct aw_keyring {
	int n;
	struct {
		char id[64];
		unsigned char secret[128];
		size_t len;
	} keys[MAX_KEYS]; /* keys[0] is current */
};

static int unhex(const char *h, unsigned char *out, size_t cap, size_t *len)
{
	size_t n = strlen(h);
	if (n % 2 || n / 2 > cap)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;
		if (sscanf(h + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (unsigned char)v;
	}
	*len = n / 2;
	return 0;
}

static int kid_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 63)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_' || s[i] == '.'))
			return 0;
	return 1;
}

static aw_err add(aw_keyring *k, const char *id, const char *hex, aw_error *err)
{
	if (k->n == MAX_KEYS)
		return aw_fail(err, AW_E_CONFIG, "at most %d keys in a key ring", MAX_KEYS);
	if (!kid_ok(id))
		return aw_fail(err, AW_E_CONFIG, "key id must match [A-Za-z0-9._-]{1,63}");
	for (int i = 0; i < k->n; i++)
		if (strcmp(k->keys[i].id, id) == 0)
			return aw_fail(err, AW_E_CONFIG, "key id %s appears twice", id);
	size_t len = 0;
	if (unhex(hex, k->keys[k->n].secret, sizeof k->keys[k->n].secret, &len) || len < 32)
		return aw_fail(err, AW_E_CONFIG, "key %s must be 64-256 hex characters (32+ bytes)",
			       id);
	if (AW_STR_COPY(k->keys[k->n].id, id) < 0) /* kid_ok: at most 63 */
		return aw_fail(err, AW_E_CONFIG, "key id must match [A-Za-z0-9._-]{1,63}");
	k->keys[k->n].len = len;
	k->n++;
	return AW_OK;
}

aw_err aw_keyring_from_env(const char *spec, aw_keyring **out, aw_error *err)
{
	aw_keyring *k = aw_calloc(1, sizeof *k);
	char *copy = spec ? aw_strdup(spec) : NULL;
	aw_err e = AW_OK;
	if (!k || !copy) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
		goto out;
	}
	char *save = NULL;
	for (char *item = strtok_r(copy, ",", &save); item && !e;
	     item = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(item, ':');
		if (!colon) {
			e = aw_fail(err, AW_E_CONFIG, "key ring items are kid:hex");
			break;
		}
		*colon = '\0';
		e = add(k, item, colon + 1, err);
	}
	if (!e && k->n == 0)
		e = aw_fail(err, AW_E_CONFIG, "the key ring names no key");
out:
	if (copy) {
		memset(copy, 0, strlen(copy));
		free(copy);
	}
	if (e) {
		aw_keyring_free(k);
		return e;
	}
	*out = k;
	return AW_OK;
}

aw_err aw_keyring_from_file(const char *path, aw_keyring **out, aw_error *err)
{
	json_error_t je;
	json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		return aw_fail(err, AW_E_CONFIG, "key file %s: %s", path, je.text);
	aw_keyring *k = aw_calloc(1, sizeof *k);
	aw_err e = AW_OK;
	const char *cur = json_string_value(json_object_get(doc, "current"));
	json_t *keys = json_object_get(doc, "keys");
	if (!k)
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	else if (!cur || !json_is_object(keys) || !json_is_string(json_object_get(keys, cur)))
		e = aw_fail(err, AW_E_CONFIG,
			    "key file needs {\"current\": kid, \"keys\": {kid: hex}}");
	if (!e)
		e = add(k, cur, json_string_value(json_object_get(keys, cur)), err);
	const char *id;
	json_t *v;
	if (!e) {
		json_object_foreach (keys, id, v) {
			if (strcmp(id, cur) == 0)
				continue;
			if (!json_is_string(v)) {
				e = aw_fail(err, AW_E_CONFIG, "key %s is not a string", id);
				break;
			}
			if ((e = add(k, id, json_string_value(v), err)))
				break;
		}
	}
	json_decref(doc);
	if (e) {
		aw_keyring_free(k);
		return e;
	}
	*out = k;
	return AW_OK;
}

aw_err aw_keyring_create_file(const char *path, aw_error *err)
{
	unsigned char raw[32];
	char hex[65], kid[32], text[256];
	if (aw_random_bytes(raw, sizeof raw))
		return aw_fail(err, AW_E_INTERNAL, "no randomness available");
	aw_hex(raw, sizeof raw, hex);
	unsigned char idraw[4];
	aw_random_bytes(idraw, sizeof idraw);
	char idhex[9];
	aw_hex(idraw, sizeof idraw, idhex);
	snprintf(kid, sizeof kid, "k-%s", idhex);
	int n = snprintf(text, sizeof text, "{\"current\": \"%s\", \"keys\": {\"%s\": \"%s\"}}\n",
			 kid, kid, hex);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return aw_fail(err, AW_E_CONFIG, "cannot create key file %s", path);
	ssize_t w = write(fd, text, (size_t)n);
	close(fd);
	memset(text, 0, sizeof text);
	memset(hex, 0, sizeof hex);
	return w == n ? AW_OK : aw_fail(err, AW_E_CONFIG, "cannot write %s", path);
}

void aw_keyring_free(aw_keyring *k)
{
	if (!k)
		return;
	memset(k, 0, sizeof *k);
	free(k);
}

const char *aw_keyring_current(const aw_keyring *k)
{
	return k && k->n ? k->keys[0].id : NULL;
}

aw_err aw_keyring_sign(const aw_keyring *k, const char *msg, size_t len, char *kid_out,
		       size_t kid_cap, char *sig, aw_error *err)
{
	if (!k || !k->n)
		return aw_fail(
			err, AW_E_CONTRACT_NO_KEY,
			"no publish key: set AWOOOP_PUBLISH_KEYS or AWOOOP_PUBLISH_KEYS_FILE");
	uint8_t mac[AW_SHA256_LEN];
	aw_hmac_sha256(k->keys[0].secret, k->keys[0].len, msg, len, mac);
	aw_hex(mac, sizeof mac, sig);
	if (aw_str_copy(kid_out, kid_cap, k->keys[0].id) < 0)
		return aw_fail(err, AW_E_INTERNAL, "publish key id longer than its field");
	return AW_OK;
}

int aw_keyring_verify(const aw_keyring *k, const char *kid, const char *msg, size_t len,
		      const char *sig)
{
	if (!k || !sig || strlen(sig) != 64)
		return 0;
	for (int i = 0; i < k->n; i++) {
		if (strcmp(k->keys[i].id, kid) != 0)
			continue;
		uint8_t mac[AW_SHA256_LEN];
		char hex[65];
		aw_hmac_sha256(k->keys[i].secret, k->keys[i].len, msg, len, mac);
		aw_hex(mac, sizeof mac, hex);
		return aw_ct_equal(hex, sig, 64);
	}
	return 0;
}

int aw_keyring_hmac(const aw_keyring *k, const char *kid, const void *msg, size_t len,
		    unsigned char mac[32])
{
	for (int i = 0; k && i < k->n; i++)
		if (kid ? strcmp(k->keys[i].id, kid) == 0 : i == 0) {
			aw_hmac_sha256(k->keys[i].secret, k->keys[i].len, msg, len, mac);
			return 0;
		}
	return -1;
}
