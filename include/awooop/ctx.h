/*
 * ctx.h - the request context passed explicitly to every service and store call.
 *
 * There are no ambient tenant globals: whoever calls into a service says for
 * which project, as which principal, under which trace and until when. The store
 * scopes every transaction to ctx->project (PostgreSQL: set_config per
 * transaction, checked by row-level security). A ctx is a plain value: copy it,
 * keep it on the stack, nothing to free.
 */
#ifndef AWOOOP_CTX_H
#define AWOOOP_CTX_H

#include <stdint.h>

#include "awooop/trace.h"
#include "awooop/uuid.h"

#define AW_PROJECT_MAX 63
#define AW_PLATFORM_PROJECT "__platform__"

typedef enum {
	AW_SCOPE_NONE = 0,
	AW_SCOPE_READER,
	AW_SCOPE_WORKER,
	AW_SCOPE_OPERATOR,
	AW_SCOPE_PROJECT_ADMIN,
	AW_SCOPE_PLATFORM_ADMIN,
} aw_scope;

typedef struct aw_ctx {
	char project[AW_PROJECT_MAX + 1];   /* "" = no project: sees no tenant rows */
	char principal[AW_PROJECT_MAX + 1]; /* key name, or "system" */
	char key_id[AW_UUID_STR_LEN + 1];   /* the API key acting, "" for system */
	aw_scope scope;
	aw_trace trace;
	char request_id[AW_UUID_STR_LEN + 1];
	int64_t deadline_ns; /* aw_clock_mono_ns() deadline; 0 = none */
	/* A request's: the project its store connections count against (the
	 * key's project, set by the HTTP layer when it authenticates; the
	 * store's per-project bound). "" for system and background work - a
	 * recorder writing a request's records clears it (aw_ctx_uncharged). */
	char charge[AW_PROJECT_MAX + 1];
} aw_ctx;

/* A system context (principal "system", platform-admin, new trace and request
 * id) for background work and the CLI; project may be NULL. A project longer
 * than AW_PROJECT_MAX is never cut to a prefix (another tenant's id): it
 * leaves "", no project, which sees no tenant rows (validate it first). */
void aw_ctx_system(aw_ctx *ctx, const char *project);
/* Copies ctx with another project (same principal, trace, deadline and
 * charge); a too-long project leaves "" as aw_ctx_system. */
void aw_ctx_with_project(const aw_ctx *ctx, const char *project, aw_ctx *out);

/* Copies ctx as background work: nothing it does counts against the
 * project's bound of store connections (a recorder, a reaper). */
void aw_ctx_uncharged(const aw_ctx *ctx, aw_ctx *out);

const char *aw_scope_name(aw_scope s);
/* 0 and *out on a known scope name ("platform-admin", "operator", ...). */
int aw_scope_parse(const char *name, aw_scope *out);

#endif
