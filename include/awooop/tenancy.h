/*
 * tenancy.h - projects, API keys, authentication and authorisation.
 *
 * API keys are "awk_" + 43 base64url characters (32 random bytes). The secret is
 * returned once, at creation; the store keeps only its SHA-256. A caller acts in
 * the project of its key; only platform-admin keys (project __platform__) may
 * act on other projects. A project a caller may not see is reported exactly like
 * a missing one (AW_E_TENANT_NOT_FOUND).
 */
#ifndef AWOOOP_TENANCY_H
#define AWOOOP_TENANCY_H

#include "awooop/store/tenancy.h"

#define AW_KEY_PREFIX "awk_"
#define AW_KEY_SECRET_LEN 47 /* without the NUL */

/* Fills secret (AW_KEY_SECRET_LEN + 1 bytes) with a fresh random API key. */
aw_err aw_key_generate(char *secret);

/* Resolves a bearer secret into ctx (project, principal, key id, scope).
 * AW_E_AUTH_INVALID for unknown, malformed or revoked keys. */
aw_err aw_tenancy_authenticate(aw_store *s, const char *secret, aw_ctx *ctx, aw_error *err);
/* May the authenticated ctx act on project with at least scope `need`? On
 * success *scoped is ctx re-targeted at project. */
aw_err aw_tenancy_authorize(const aw_ctx *ctx, const char *project, aw_scope need, aw_ctx *scoped,
			    aw_error *err);

aw_err aw_project_create(aw_store *s, const aw_ctx *ctx, const char *id, aw_project *out,
			 aw_error *err);
/* ctx->project names the project. */
aw_err aw_project_get(aw_store *s, const aw_ctx *ctx, aw_project *out, aw_error *err);
aw_err aw_project_list(aw_store *s, const aw_ctx *ctx, const char *after, int limit,
		       aw_project **out, int *n, aw_error *err);

/* Creates a key in ctx->project; secret receives AW_KEY_SECRET_LEN + 1 bytes. */
aw_err aw_key_create(aw_store *s, const aw_ctx *ctx, const char *name, aw_scope scope,
		     aw_apikey *out, char *secret, aw_error *err);
aw_err aw_key_list(aw_store *s, const aw_ctx *ctx, aw_apikey **out, int *n, aw_error *err);
aw_err aw_key_revoke(aw_store *s, const aw_ctx *ctx, const char *key_id, aw_error *err);
/* 1 when principal's key was minted by `by`, directly or through a chain of
 * keys `by` minted (at most 16 deep; a longer chain counts as minted): a sock
 * puppet of `by`, whose approval never counts as another person's. keys: the
 * project's keys (aw_store_key_list); a principal with no key of the project,
 * or whose key minted itself, was minted by nobody here. */
int aw_key_minted_by(const aw_apikey *keys, int n, const char *principal, const char *by);

/* First start: makes sure __platform__ exists and has a platform-admin key.
 * With env_key (AWOOOP_BOOTSTRAP_KEY) that key is installed (replacing an older
 * bootstrap key); otherwise a key is generated only when none exists, and then
 * written to *printed (AW_KEY_SECRET_LEN + 1 bytes; "" when nothing new). */
aw_err aw_tenancy_bootstrap(aw_store *s, const char *env_key, char *printed, aw_error *err);

#endif
