/*
 * fuzz_config.c - parsers of input that arrives from outside the process but
 * not over HTTP: ADR-113 invalidation messages read from Redis, the publish key
 * spec (AWOOOP_PUBLISH_KEYS), Redis URLs and per-project bounds
 * (--mcp-project-workers, --llm-project-inflight), --listen addresses
 * (not resolved). Checks: no crash, a decoded message carries valid revision
 * ids, a parsed bound is in range, a parsed address is IPv4 or IPv6 and
 * formats back to what parses to the same address.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/bounds.h"
#include "awooop/http.h"
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
	aw_bounds b;
	if (aw_bounds_parse(s, 7, 1, 1000, "x", &b, &err) == AW_OK) {
		if (b.def < 1 || b.def > 1000 || b.n > AW_BOUNDS_MAX)
			abort();
		for (int i = 0; i < b.n; i++)
			if (b.o[i].v < 1 || b.o[i].v > 1000 || aw_bounds_of(&b, b.o[i].project) < 1)
				abort();
	}
	struct sockaddr_storage sa, again;
	socklen_t len = 0, len2 = 0;
	if (aw_http_listen_parse(s, 0, &sa, &len, &err) == AW_OK) {
		char txt[64];
		if (sa.ss_family != AF_INET && sa.ss_family != AF_INET6)
			abort();
		aw_http_listen_format(&sa, txt, sizeof txt);
		if (aw_http_listen_parse(txt, 0, &again, &len2, &err) != AW_OK || len != len2 ||
		    memcmp(&sa, &again, len) != 0)
			abort();
	}
	free(s);
	return 0;
}
