/*
 * egress.h - where awooop may connect on a tenant's behalf (MCP upstreams,
 * the run runtime's http steps). Checked on the address a connection is
 * about to use - after DNS resolution, at connect time - so a name that
 * resolves differently the second time (DNS rebinding) gains nothing.
 *   always refused: link-local and cloud metadata addresses (169.254.0.0/16,
 *                   fe80::/10, fd00:ec2::254), unspecified (0.0.0.0, ::),
 *                   multicast and broadcast
 *   refused unless the project allows private networks: loopback
 *                   (127.0.0.0/8, ::1), private (10/8, 172.16/12, 192.168/16,
 *                   fc00::/7), carrier-grade NAT (100.64/10)
 * IPv4-mapped IPv6 addresses are judged as their IPv4 address.
 */
#ifndef AWOOOP_EGRESS_H
#define AWOOOP_EGRESS_H

#include <sys/socket.h>

typedef enum {
	AW_EGRESS_OK = 0,
	AW_EGRESS_PRIVATE,   /* loopback / private: allowed only when the project says */
	AW_EGRESS_FORBIDDEN, /* link-local, metadata, unspecified, multicast: never */
} aw_egress_class;

aw_egress_class aw_egress_classify(const struct sockaddr *sa);
/* 1 when a connection to sa is allowed. */
int aw_egress_allowed(const struct sockaddr *sa, int allow_private);
/* "link-local or metadata address" etc., for errors (static storage). */
const char *aw_egress_reason(aw_egress_class c);

#endif
