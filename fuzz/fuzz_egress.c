/*
 * fuzz_egress.c - the egress classes (egress.h) against a simple model. The
 * first 4 bytes are an IPv4 address; every IPv6 form that carries it
 * (mapped, translated, compatible, NAT64 64:ff9b::/96, 6to4) must be judged
 * as it is, and the local-use NAT64 prefix no more leniently. The rest (or
 * all 16 bytes, when there are that many) is an arbitrary IPv6 address:
 * classified without a crash, a link-local, metadata or multicast address
 * never allowed, a granted project never refused what an ungranted one may.
 */
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/egress.h"

static aw_egress_class v6(const uint8_t b[16])
{
	struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
	memcpy(in6.sin6_addr.s6_addr, b, 16);
	return aw_egress_classify((const struct sockaddr *)&in6);
}

/* b with the IPv4 address a at bytes at[0..3] of prefix p (its length n). */
static aw_egress_class form(const uint8_t *p, size_t n, const uint8_t a[4], const int at[4])
{
	uint8_t b[16] = {0};
	if (n) /* memcpy's source may not be NULL, even for 0 bytes */
		memcpy(b, p, n);
	for (int i = 0; i < 4; i++)
		b[at[i]] = a[i];
	return v6(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	struct sockaddr_in in = {.sin_family = AF_INET};
	memcpy(&in.sin_addr, data, 4);
	aw_egress_class want = aw_egress_classify((const struct sockaddr *)&in);
	static const uint8_t mapped[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static const uint8_t translated[] = {0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static const uint8_t nat64[] = {0, 0x64, 0xff, 0x9b};
	static const uint8_t local64[] = {0, 0x64, 0xff, 0x9b, 0, 1};
	static const uint8_t sixto4[] = {0x20, 0x02};
	static const int tail[4] = {12, 13, 14, 15}, six[4] = {2, 3, 4, 5};
	int v4_zero = data[0] == 0 && data[1] == 0 && data[2] == 0 && data[3] <= 1;
	if (form(mapped, sizeof mapped, data, tail) != want ||
	    form(translated, sizeof translated, data, tail) != want ||
	    form(nat64, sizeof nat64, data, tail) != want ||
	    form(sixto4, sizeof sixto4, data, six) != want ||
	    (!v4_zero && form(NULL, 0, data, tail) != want) || /* ::a.b.c.d, not :: or ::1 */
	    (data[0] && form(local64, sizeof local64, data, tail) < want))
		abort();
	uint8_t b[16] = {0};
	memcpy(b, size >= 16 ? data : data + 4, size >= 16 ? 16 : size - 4);
	struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
	memcpy(in6.sin6_addr.s6_addr, b, 16);
	const struct sockaddr *sa = (const struct sockaddr *)&in6;
	aw_egress_class c = aw_egress_classify(sa);
	if ((b[0] == 0xff || (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)) && c != AW_EGRESS_FORBIDDEN)
		abort();
	if (aw_egress_allowed(sa, 0) && !aw_egress_allowed(sa, 1))
		abort();
	if (c == AW_EGRESS_FORBIDDEN && aw_egress_allowed(sa, 1))
		abort();
	return 0;
}
