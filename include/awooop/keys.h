/*
 * keys.h - the only place Redis key and channel names are built. Every name is
 * tenant-scoped ("{project}:...") or one of the platform resources
 * ("platform:..."); components are validated so no id can reach another
 * tenant's names or widen a pattern.
 */
#ifndef AWOOOP_KEYS_H
#define AWOOOP_KEYS_H

#include <stddef.h>

#include "awooop/err.h"

/* Pattern every worker subscribes to for contract invalidation (ADR-113 D2). */
#define AW_KEYS_INVALIDATE_PATTERN "platform:contract:invalidate:*"

/* "platform:contract:invalidate:{project}"; AW_E_TENANT_SLUG for a bad project. */
aw_err aw_keys_invalidate_channel(const char *project, char *out, size_t cap);
/* The project of an invalidation channel name, or -1 if it is not one. */
int aw_keys_invalidate_project(const char *channel, char *project, size_t cap);

#endif
