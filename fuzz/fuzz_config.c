/*
 * fuzz_config.c - parsers of input that arrives from outside the process but
 * not over HTTP: ADR-113 invalidation messages read from Redis, the publish key
 * spec (AWOOOP_PUBLISH_KEYS), and Redis URLs. Checks: no crash, and a decoded
 * message carries valid revision ids.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/redis.h"
#include "awooop/keyring.h"
#include "awooop/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	aw_invalidation m;
	if (aw_invalidation_decode((const char *)data, size, &m) == 0 &&
	    !aw_uuid_valid(m.new_revision_id))
		abort();
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	aw_keyring *k = NULL;
	aw_error err;
	if (aw_keyring_from_env(s, &k, &err) == AW_OK) {
		char kid[64], sig[65];
		if (aw_keyring_sign(k, "x", 1, kid, sizeof kid, sig, &err) != AW_OK ||
		    !aw_keyring_verify(k, kid, "x", 1, sig))
			abort();
		aw_keyring_free(k);
	}
	aw_redis_url u;
	if (aw_redis_url_parse(s, &u, &err) == AW_OK &&
	    (u.port < 1 || u.port > 65535 || u.db < 0 || u.db > 15 || !u.host[0]))
		abort();
	free(s);
	return 0;
}
