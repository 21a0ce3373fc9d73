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

#include <jansson.h>

#include "awooop/clock.h"
#include "awooop/store/tenancy.h"

#define AW_KEY_PREFIX "awk_"
#define AW_KEY_SECRET_LEN 47 /* without the NUL */

/* ---- virtual keys: what a key may do beyond its scope (all optional) ----
 * Written as JSON (the API's and the CLI's):
 *   {"models": ["route or model", ...],          at most 16, each 1-128 bytes
 *    "rpm": N, "tpm": N,                         1 .. 10^9 per UTC minute
 *    "budget": {"tokens": N, "cost_usd": X,      a sub-budget of the project's
 *               "period": "day"|"month"|"total"},
 *    "expires_at": "YYYY-MM-DDTHH:MM:SS[.mmm]Z",
 *    "metadata": {"team": "...", "user": "..."}} [A-Za-z0-9][A-Za-z0-9._@-]{0,63}
 * Unknown members are refused; every refusal is AW_E_KEY_LIMITS with the
 * member's pointer. A limit absent (or null in an update) is no limit. */
#define AW_KEY_MODELS_MAX 16
#define AW_KEY_MODEL_MAX 128
#define AW_KEY_META_MAX 64
#define AW_KEY_LIMIT_MAX 1000000000LL
typedef struct {
	int nmodels;
	char models[AW_KEY_MODELS_MAX][AW_KEY_MODEL_MAX + 1];
	long long rpm, tpm;	 /* 0: none */
	long long budget_tokens; /* -1: none */
	long long budget_cost;	 /* micro-USD; -1: none */
	char budget_period[8];	 /* "day", "month" or "total" ("" without a budget) */
	char team[AW_KEY_META_MAX + 1], user[AW_KEY_META_MAX + 1]; /* "" none */
	char expires_at[AW_TS_LEN + 1];				   /* "" never */
} aw_key_limits;

/* No limits at all. */
void aw_key_limits_none(aw_key_limits *l);
/* 1 when l limits anything a call's admission checks. */
int aw_key_limits_any(const aw_key_limits *l);
/* Parses a limits document (an object; at the API's root, where other
 * members may sit beside: those in `skip` are passed over). */
aw_err aw_key_limits_parse(const json_t *doc, const char *const *skip, aw_key_limits *out,
			   aw_error *err);
/* The stored form (no expires_at: a column of its own); new reference. */
json_t *aw_key_limits_json(const aw_key_limits *l);
/* Reads the stored form back (a document this process wrote; a malformed
 * one is no limits, with a warn log line). */
void aw_key_limits_load(const char *stored, const char *expires_at, aw_key_limits *out);
/* 1 when the key allows model (the request's model: a route name or an
 * upstream model). A key without a list allows every model. */
int aw_key_allows(const aw_key_limits *l, const char *model);
/* 1 when expires_at has passed at now_ms. */
int aw_key_expired(const aw_key_limits *l, int64_t now_ms);

/* Fills secret (AW_KEY_SECRET_LEN + 1 bytes) with a fresh random API key. */
aw_err aw_key_generate(char *secret);

/* Resolves a bearer secret into ctx (project, principal, key id, scope).
 * AW_E_AUTH_INVALID for unknown, malformed or revoked keys. */
aw_err aw_tenancy_authenticate(aw_store *s, const char *secret, aw_ctx *ctx, aw_error *err);
/* The same, and the key's limits (lim may be NULL). An expired key is
 * AW_E_AUTH_EXPIRED. */
aw_err aw_tenancy_authenticate_key(aw_store *s, const char *secret, aw_ctx *ctx, aw_key_limits *lim,
				   aw_error *err);
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
/* The same with limits (NULL: none). */
aw_err aw_key_create_limited(aw_store *s, const aw_ctx *ctx, const char *name, aw_scope scope,
			     const aw_key_limits *lim, aw_apikey *out, char *secret, aw_error *err);
/* Changes a key's limits: patch's members replace the key's, a null member
 * removes that limit (JSON merge patch, RFC 7386, over the limits
 * document), audited (key.update). *out: the key after it. */
aw_err aw_key_update(aw_store *s, const aw_ctx *ctx, const char *key_id, const json_t *patch,
		     aw_apikey *out, aw_error *err);
/* One key of the project (limits and expiry included). */
aw_err aw_key_get(aw_store *s, const aw_ctx *ctx, const char *key_id, aw_apikey *out,
		  aw_error *err);
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
