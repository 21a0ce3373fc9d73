/*
 * egress.c - the address classes of egress.h. Pure functions on a sockaddr;
 * the callers hook them into their connect path (curl's opensocket callback).
 */
#include "awooop/egress.h"

#include <netinet/in.h>
#include <stdint.h>
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
	const uint8_t *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static const uint8_t ec2[16] = {0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0,    0,
					0,    0,    0,	  0,	0, 0, 0x02, 0x54};
	if (!memcmp(b, mapped, 12))
		return classify_v4((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 |
				   (uint32_t)b[14] << 8 | b[15]);
	int zero = 1;
	for (int i = 0; i < 15; i++)
		zero &= b[i] == 0;
	if ((zero && b[15] == 0) || !memcmp(b, ec2, 16) ||
	    (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) || b[0] == 0xff)
		return AW_EGRESS_FORBIDDEN; /* ::, metadata, link-local, multicast */
	if ((zero && b[15] == 1) || (b[0] & 0xfe) == 0xfc)
		return AW_EGRESS_PRIVATE; /* ::1, unique local */
	return AW_EGRESS_OK;
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
		return "a loopback or private address (not allowed for this project)";
	default: return "a link-local, metadata, multicast or unspecified address (never allowed)";
	}
}
