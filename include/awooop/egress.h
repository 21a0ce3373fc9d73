/*
 * egress.h - where awooop may connect on a tenant's behalf (MCP upstreams,
 * the run runtime's http steps). Checked on the address a connection is
 * about to use - after DNS resolution, at connect time - so a name that
 * resolves differently the second time (DNS rebinding) gains nothing.
 *   always refused: link-local and cloud metadata addresses (169.254.0.0/16,
 *                   fe80::/10, fd00:ec2::254), unspecified (0.0.0.0, ::),
 *                   multicast and broadcast
 *   refused unless the operator grants the project private egress
 *                   (aw_egress_grant, serve --egress-allow-private): loopback
 *                   (127.0.0.0/8, ::1), private (10/8, 172.16/12, 192.168/16,
 *                   fc00::/7), carrier-grade NAT (100.64/10)
 * An IPv6 address that carries an IPv4 address is judged as that address:
 * IPv4-mapped (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d),
 * IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96; in the local-use
 * 64:ff9b:1::/48 every RFC 6052 placement is read and the strictest class
 * wins) and 6to4 (2002:AABB:CCDD::/48).
 * A tenant never grants itself private egress: no contract field does.
 */
#ifndef AWOOOP_EGRESS_H
#define AWOOOP_EGRESS_H

#include <sys/socket.h>

#include "awooop/err.h"

typedef enum {
	AW_EGRESS_OK = 0,
	AW_EGRESS_PRIVATE,   /* loopback / private: allowed only when the operator says */
	AW_EGRESS_FORBIDDEN, /* link-local, metadata, unspecified, multicast: never */
} aw_egress_class;

aw_egress_class aw_egress_classify(const struct sockaddr *sa);
/* 1 when a connection to sa is allowed. */
int aw_egress_allowed(const struct sockaddr *sa, int allow_private);
/* "link-local or metadata address" etc., for errors (static storage). */
const char *aw_egress_reason(aw_egress_class c);

/* The operator's grant, one for every door (MCP upstreams, http run steps):
 * the projects (comma-separated ids, or "*") that may reach loopback and
 * private addresses. NULL or "": none (the default). Replaces the previous
 * grant (copied; thread-safe, meant to be set once at start).
 * AW_E_NOMEM when it cannot be copied (the previous grant stays). */
aw_err aw_egress_grant(const char *projects, aw_error *err);
/* 1 when project holds the grant. */
int aw_egress_private_granted(const char *project);

#endif
