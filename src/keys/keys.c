/*
 * keys.c - Redis names (see keys.h). Round 1 needs the ADR-113 invalidation
 * channels; the key inventory and its migration extend this module.
 */
#include "awooop/keys.h"

#include <stdio.h>
#include <string.h>

#include "awooop/ctx.h"
#include "awooop/ident.h"

#define INVALIDATE_PREFIX "platform:contract:invalidate:"

static int project_ok(const char *p)
{
	return aw_ident_project_ok(p) || (p && strcmp(p, AW_PLATFORM_PROJECT) == 0);
}

aw_err aw_keys_invalidate_channel(const char *project, char *out, size_t cap)
{
	if (!project_ok(project))
		return AW_E_TENANT_SLUG;
	int n = snprintf(out, cap, INVALIDATE_PREFIX "%s", project);
	return n > 0 && (size_t)n < cap ? AW_OK : AW_E_INTERNAL;
}

int aw_keys_invalidate_project(const char *channel, char *project, size_t cap)
{
	size_t n = strlen(INVALIDATE_PREFIX);
	if (!channel || strncmp(channel, INVALIDATE_PREFIX, n) != 0 || !project_ok(channel + n))
		return -1;
	snprintf(project, cap, "%s", channel + n);
	return 0;
}
