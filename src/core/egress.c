/*
 * egress.c - the address classes of egress.h, and the operator's grant of
 * private egress. Classification is pure functions on a sockaddr; the
 * callers hook them into their connect path (curl's opensocket callback)
 * and ask aw_egress_private_granted for the project they connect for.
 */
#include "awooop/alloc.h"
#include "awooop/egress.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static aw_egress_class classify_v4(uint32_t a) /* host byte order */
{
	uint8_t o1 = (uint8_t)(a >> 24), o2 = (uint8_t)(a >> 16);
	if (a == 0 || o1 == 0 || (o1 == 169 && o2 == 254) || o1 >= 224)
		return AW_EGRESS_FORBIDDEN; /* this network, link-local/metadata, multicast+ */
	if (o1 == 127 || o1 == 10 || (o1 == 172 && (o2 & 0xf0) == 16) || (o1 == 192 && o2 == 168) ||
	    (o1 == 100 && (o2 & 0xc0) == 64))
		return AW_EGRESS_PRIVATE;
	return AW_EGRESS_OK;
}

/* The IPv4 address in four bytes of b (at i, j, k, l), classified. */
static aw_egress_class v4_at(const uint8_t *b, int i, int j, int k, int l)
{
	return classify_v4((uint32_t)b[i] << 24 | (uint32_t)b[j] << 16 | (uint32_t)b[k] << 8 |
			   b[l]);
}

static aw_egress_class stricter(aw_egress_class a, aw_egress_class b)
{
	return a > b ? a : b;
}

static int zeros(const uint8_t *b, int from, int to) /* b[from..to) all 0 */
{
	int z = 1;
	for (int i = from; i < to; i++)
		z &= b[i] == 0;
	return z;
}

/* 64:ff9b:1::/48 holds NAT64 prefixes of any RFC 6052 length (/48 to /96),
 * each placing the IPv4 address elsewhere: every placement is read and the
 * strictest class wins. A reading in 0.0.0.0/8 is the zero padding of
 * another placement, not an address, and is skipped (all of them: refused). */
static aw_egress_class local_nat64(const uint8_t *b)
{
	static const int at[4][4] = {
		{6, 7, 9, 10}, {7, 9, 10, 11}, {9, 10, 11, 12}, {12, 13, 14, 15}};
	aw_egress_class c = AW_EGRESS_OK;
	int read = 0;
	for (int i = 0; i < 4; i++)
		if (b[at[i][0]]) {
			c = stricter(c, v4_at(b, at[i][0], at[i][1], at[i][2], at[i][3]));
			read = 1;
		}
	return read ? c : AW_EGRESS_FORBIDDEN;
}

static aw_egress_class classify_v6(const uint8_t *b)
{
	static const uint8_t ec2[16] = {0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0,    0,
					0,    0,    0,	  0,	0, 0, 0x02, 0x54};
	if (zeros(b, 0, 15) && b[15] <= 1) /* ::, ::1 */
		return b[15] ? AW_EGRESS_PRIVATE : AW_EGRESS_FORBIDDEN;
	if (zeros(b, 0, 10) && b[10] == 0xff && b[11] == 0xff) /* ::ffff:a.b.c.d mapped */
		return v4_at(b, 12, 13, 14, 15);
	if (zeros(b, 0, 8) && b[8] == 0xff && b[9] == 0xff && zeros(b, 10, 12)) /* translated */
		return v4_at(b, 12, 13, 14, 15);
	if (zeros(b, 0, 12)) /* ::a.b.c.d, IPv4-compatible (deprecated) */
		return v4_at(b, 12, 13, 14, 15);
	if (b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) {
		if (zeros(b, 4, 12)) /* 64:ff9b::/96, the well-known NAT64 prefix */
			return v4_at(b, 12, 13, 14, 15);
		if (b[4] == 0 && b[5] == 1) /* 64:ff9b:1::/48, local use */
			return local_nat64(b);
	}
	if (b[0] == 0x20 && b[1] == 0x02) /* 2002:AABB:CCDD::/48, 6to4 */
		return v4_at(b, 2, 3, 4, 5);
	if (!memcmp(b, ec2, 16) || (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) || b[0] == 0xff)
		return AW_EGRESS_FORBIDDEN; /* metadata, link-local, multicast */
	if ((b[0] & 0xfe) == 0xfc)
		return AW_EGRESS_PRIVATE; /* unique local */
	return AW_EGRESS_OK;
}

aw_egress_class aw_egress_classify(const struct sockaddr *sa)
{
	if (!sa)
		return AW_EGRESS_FORBIDDEN;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		return classify_v4(ntohl(in->sin_addr.s_addr));
	}
	if (sa->sa_family != AF_INET6)
		return AW_EGRESS_FORBIDDEN; /* unix sockets and the like: not egress */
	return classify_v6(((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr);
}

int aw_egress_allowed(const struct sockaddr *sa, int allow_private)
{
	aw_egress_class c = aw_egress_classify(sa);
	return c == AW_EGRESS_OK || (c == AW_EGRESS_PRIVATE && allow_private);
}

const char *aw_egress_reason(aw_egress_class c)
{
	switch (c) {
	case AW_EGRESS_OK: return "allowed";
	case AW_EGRESS_PRIVATE:
		return "a loopback or private address (not granted to this project)";
	default: return "a link-local, metadata, multicast or unspecified address (never allowed)";
	}
}

/* ---- the grant: a copy of the operator's list, read under its lock */

static pthread_mutex_t grant_mu = PTHREAD_MUTEX_INITIALIZER;
static char *grant; /* NULL: none */

aw_err aw_egress_grant(const char *projects, aw_error *err)
{
	char *copy = NULL;
	if (projects && *projects && !(copy = aw_strdup(projects)))
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	pthread_mutex_lock(&grant_mu);
	char *old = grant;
	grant = copy;
	pthread_mutex_unlock(&grant_mu);
	free(old);
	return AW_OK;
}

int aw_egress_private_granted(const char *project)
{
	if (!project || !*project)
		return 0;
	size_t n = strlen(project);
	int ok = 0;
	pthread_mutex_lock(&grant_mu);
	for (const char *p = grant; p && *p && !ok;) {
		size_t len = strcspn(p, ",");
		ok = (len == 1 && *p == '*') || (len == n && !strncmp(p, project, n));
		p += len + (p[len] == ',');
	}
	pthread_mutex_unlock(&grant_mu);
	return ok;
}
