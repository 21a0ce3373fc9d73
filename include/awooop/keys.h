/*
 * keys.h - the only place Redis key and channel names are built (INV-1).
 *
 * Every name awooop touches is tenant-scoped ("{project_id}:...") or one of
 * the three platform resources ("platform:..."). Components are validated:
 * one containing ':', '*', '?', '[', ']', '\', whitespace or a control
 * character, an empty one or one over 128 bytes is refused (never escaped:
 * an escaped id would be a second spelling of the same thing), so no id can
 * reach another tenant's keys or widen a SCAN pattern. The registry lists
 * every pattern of the legacy single-tenant inventory with its new form.
 */
#ifndef AWOOOP_KEYS_H
#define AWOOOP_KEYS_H

#include <stddef.h>

#include "awooop/err.h"

/* Pattern every worker subscribes to for contract invalidation (ADR-113 D2). */
#define AW_KEYS_INVALIDATE_PATTERN "platform:contract:invalidate:*"

/* "platform:contract:invalidate:{project}"; AW_E_TENANT_SLUG for a bad project. */
aw_err aw_keys_invalidate_channel(const char *project, char *out, size_t cap);
/* The project of an invalidation channel name, or -1 if it is not one (or
 * it does not fit project[cap]: never a cut project). */
int aw_keys_invalidate_project(const char *channel, char *project, size_t cap);

typedef enum { AW_KEY_TENANT, AW_KEY_PLATFORM } aw_key_scope;

typedef struct {
	const char *name;     /* registry name, e.g. "incident" */
	const char *priority; /* P0..P3, as in the inventory */
	const char *type;     /* Redis type: string, hash, list, set */
	int ttl_s;	      /* expected TTL; 0 = none, -1 = varies/configured */
	aw_key_scope scope;
	const char *legacy; /* "incident:{incident_id}" */
	const char *modern; /* "{project_id}:incident:{incident_id}" */
} aw_key_pattern;

int aw_keys_count(void);
const aw_key_pattern *aw_keys_at(int i);
const aw_key_pattern *aw_keys_find(const char *name);

/* 0 when s may be a key component. */
int aw_keys_component_ok(const char *s);
/* Builds the new (modern=1) or legacy form of pattern p for project with the
 * given component values (names without braces, in template order; extra
 * values are an error). AW_E_KEYS_COMPONENT names the bad component in err. */
aw_err aw_keys_build(const aw_key_pattern *p, int modern, const char *project,
		     const char *const *values, int nvalues, char *out, size_t cap, aw_error *err);
/* Classifies a raw key: the pattern it is an instance of and whether it is the
 * legacy or new form (*modern), the project for new tenant forms. NULL when
 * no pattern matches. */
const aw_key_pattern *aw_keys_classify(const char *key, int *modern, char *project, size_t cap);

#endif
