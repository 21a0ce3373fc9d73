/*
 * redaction.h - a project's custom redaction patterns: the platform sets, per
 * project, a short list of named PCRE2 patterns whose matches in that
 * project's text become "[REDACTED:custom:<name>]" (redact.h says what a list
 * may hold and how matching is bounded). Only a platform-admin key sets a
 * list, never the tenant; each change is audited in the project's chain and
 * bumps the list's version.
 *
 * Every process keeps the compiled lists in the redaction engine's registry,
 * compiled once per version: the process that writes a list installs it at
 * commit, the others when their poller (aw_redaction_poller_start) sees the
 * version move - one small read of every project's version per interval, a
 * reload only for a list that changed.
 */
#ifndef AWOOOP_REDACTION_H
#define AWOOOP_REDACTION_H

#include <jansson.h>

#include "awooop/store/redaction.h"

/* A project's list as the API shows it. */
typedef struct {
	int64_t version;  /* 0: never set */
	json_t *patterns; /* the list (owned: aw_redaction_list_clear); [] when none */
	char updated_at[AW_TS_LEN + 1]; /* "" when never set */
	char updated_by[AW_PROJECT_MAX + 1];
} aw_redaction_list;
void aw_redaction_list_clear(aw_redaction_list *l);

/* ctx->project's list (ctx authorised for the project by the caller).
 * AW_E_TENANT_NOT_FOUND when the project does not exist. */
aw_err aw_redaction_get(aw_store *s, const aw_ctx *ctx, aw_redaction_list *out, aw_error *err);
/* Replaces ctx->project's list with patterns (borrowed; [] clears it). ctx
 * must be a platform-admin's (AW_E_AUTH_SCOPE otherwise); a list that does
 * not validate is AW_E_REDACT_PATTERN and nothing changes. On success the
 * list is audited ("redaction.patterns.set"), in force in this process at
 * once, and out (may be NULL) is what is stored. */
aw_err aw_redaction_set(aw_store *s, const aw_ctx *ctx, const json_t *patterns,
			aw_redaction_list *out, aw_error *err);

/* Brings this process's registry up to the store: every project whose list
 * version moved is read and compiled again. *changed (may be NULL): how
 * many lists were installed. */
aw_err aw_redaction_sync(aw_store *s, int *changed, aw_error *err);

/* A thread that calls aw_redaction_sync every interval_ms (the background
 * loop "redaction_sync"); a first sync happens before this returns. */
typedef struct aw_redaction_poller aw_redaction_poller;
aw_err aw_redaction_poller_start(aw_store *s, int interval_ms, aw_redaction_poller **out,
				 aw_error *err);
void aw_redaction_poller_stop(aw_redaction_poller *p);

#endif
