/*
 * fuzz_redis_url.c - the --redis URL (redis.h), as an operator or a secret
 * file could give it. Checks: no crash; an accepted URL has a host, a port
 * and a database in range, tls_* only with rediss://, a client certificate
 * only with its key; the redacted form of any input never holds the
 * password: its userinfo is the user name as written and ":***".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/redis.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	aw_redis_url u;
	aw_error err;
	char red[1024];
	aw_redis_url_redact(s, red, sizeof red);
	if (aw_redis_url_parse(s, &u, &err) == AW_OK) {
		if (!u.host[0] || u.port < 1 || u.port > 65535 || u.db < 0 || u.db > 15)
			abort();
		if (!u.tls && (u.ca[0] || u.cert[0] || u.key[0] || u.server_name[0]))
			abort();
		if (!u.cert[0] != !u.key[0])
			abort();
		/* the password as written is between the userinfo's ':' and its '@' */
		const char *a = strstr(s, "://") + 3;
		const char *end = a + strcspn(a, "/?"), *at = NULL;
		for (const char *q = a; q < end; q++)
			if (*q == '@')
				at = q;
		const char *colon = at ? memchr(a, ':', (size_t)(at - a)) : NULL;
		size_t n = colon ? (size_t)(at - colon - 1) : 0;
		char user[300], ui[1024];
		if (n && (size_t)(colon - a) < sizeof user) {
			memcpy(user, a, (size_t)(colon - a));
			user[colon - a] = '\0';
			const char *ra = strstr(red, "://");
			ra = ra ? ra + 3 : red;
			const char *rend = ra + strcspn(ra, "/?"), *rat = ra;
			for (const char *q = ra; q < rend; q++)
				if (*q == '@')
					rat = q;
			snprintf(ui, sizeof ui, "%.*s", (int)(rat - ra), ra);
			/* the user name as written, then ":***" and nothing else */
			if (strncmp(ui, user, strlen(user)) || strcmp(ui + strlen(user), ":***"))
				abort();
		}
	}
	free(s);
	return 0;
}
