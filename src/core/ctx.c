/*
 * ctx.c - constructors for aw_ctx and the scope names (see ctx.h).
 */
#include "awooop/ctx.h"
#include "awooop/str.h"

#include <stdio.h>
#include <string.h>

static const char *const scope_names[] = {
	[AW_SCOPE_NONE] = "none",
	[AW_SCOPE_READER] = "reader",
	[AW_SCOPE_WORKER] = "worker",
	[AW_SCOPE_OPERATOR] = "operator",
	[AW_SCOPE_PROJECT_ADMIN] = "project-admin",
	[AW_SCOPE_PLATFORM_ADMIN] = "platform-admin",
};

void aw_ctx_system(aw_ctx *ctx, const char *project)
{
	memset(ctx, 0, sizeof *ctx);
	(void)!AW_STR_COPY(ctx->project, project); /* too long: "", no project (ctx.h) */
	snprintf(ctx->principal, sizeof ctx->principal, "system");
	ctx->scope = AW_SCOPE_PLATFORM_ADMIN;
	aw_trace_new(&ctx->trace);
	aw_uuid7_str(ctx->request_id);
}

void aw_ctx_with_project(const aw_ctx *ctx, const char *project, aw_ctx *out)
{
	aw_ctx c = *ctx;
	(void)!AW_STR_COPY(c.project, project); /* too long: "", no project (ctx.h) */
	*out = c;
}

void aw_ctx_uncharged(const aw_ctx *ctx, aw_ctx *out)
{
	aw_ctx c = *ctx;
	c.charge[0] = '\0';
	*out = c;
}

const char *aw_scope_name(aw_scope s)
{
	return (unsigned)s <= AW_SCOPE_PLATFORM_ADMIN ? scope_names[s] : "none";
}

int aw_scope_parse(const char *name, aw_scope *out)
{
	for (int s = AW_SCOPE_READER; s <= AW_SCOPE_PLATFORM_ADMIN; s++) {
		if (name && strcmp(name, scope_names[s]) == 0) {
			*out = (aw_scope)s;
			return 0;
		}
	}
	return -1;
}
