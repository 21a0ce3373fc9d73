/*
 * tenancy.c - the tenancy service (see tenancy.h): who a caller is, what it may
 * touch, and the project and key lifecycle. Written against store.h only.
 */
#include "awooop/alloc.h"
#include "awooop/tenancy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/audit.h"
#include "awooop/crypto.h"
#include "awooop/ident.h"
#include "awooop/log.h"

static int secret_shape_ok(const char *s)
{
	if (!s || strlen(s) != AW_KEY_SECRET_LEN || strncmp(s, AW_KEY_PREFIX, 4) != 0)
		return 0;
	for (const char *p = s + 4; *p; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_'))
			return 0;
	}
	return 1;
}

aw_err aw_tenancy_authenticate(aw_store *s, const char *secret, aw_ctx *ctx, aw_error *err)
{
	if (!secret_shape_ok(secret))
		return aw_fail(err, AW_E_AUTH_INVALID, "invalid API key");
	char hash[AW_SHA256_HEX_LEN + 1];
	aw_sha256_hex(secret, strlen(secret), hash);
	aw_apikey k;
	aw_err e = aw_store_platform_lookup_key(s, ctx, hash, &k, err);
	if (e)
		return e;
	if (k.revoked_at[0])
		return aw_fail(err, AW_E_AUTH_INVALID, "invalid API key");
	snprintf(ctx->project, sizeof ctx->project, "%s", k.project_id);
	snprintf(ctx->principal, sizeof ctx->principal, "%s", k.name);
	snprintf(ctx->key_id, sizeof ctx->key_id, "%s", k.key_id);
	ctx->scope = k.scope;
	return AW_OK;
}

aw_err aw_tenancy_authorize(const aw_ctx *ctx, const char *project, aw_scope need, aw_ctx *scoped,
			    aw_error *err)
{
	int platform = ctx->scope == AW_SCOPE_PLATFORM_ADMIN &&
		       strcmp(ctx->project, AW_PLATFORM_PROJECT) == 0;
	if (!platform && strcmp(ctx->project, project) != 0)
		return aw_fail(err, AW_E_TENANT_NOT_FOUND, "project not found");
	if (ctx->scope < need)
		return aw_fail(err, AW_E_AUTH_SCOPE, "this needs scope %s or higher",
			       aw_scope_name(need));
	aw_ctx_with_project(ctx, project, scoped);
	return AW_OK;
}

aw_err aw_project_create(aw_store *s, const aw_ctx *ctx, const char *id, aw_project *out,
			 aw_error *err)
{
	if (!aw_ident_project_ok(id))
		return aw_fail_at(err, AW_E_TENANT_SLUG, "/id",
				  "project id must match [a-z0-9][a-z0-9_-]{1,62}");
	if (aw_ident_project_reserved(id))
		return aw_fail_at(err, AW_E_TENANT_RESERVED, "/id", "project id is reserved");
	aw_ctx pc;
	aw_ctx_with_project(ctx, id, &pc);
	aw_project p = {0};
	snprintf(p.project_id, sizeof p.project_id, "%s", id);
	aw_clock_now(p.created_at);
	snprintf(p.created_by, sizeof p.created_by, "%s", ctx->principal);
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, &pc, AW_TXN_WRITE, &t, err);
	if (e)
		return e;
	json_t *payload = json_pack("{s:s}", "id", id);
	if ((e = aw_store_project_insert(t, &p, err)) ||
	    (e = aw_audit_record(t, &pc, "project.create", id, payload, err))) {
		json_decref(payload);
		aw_store_rollback(t);
		return e;
	}
	json_decref(payload);
	if ((e = aw_store_commit(t, err)))
		return e;
	aw_log(AW_LOG_INFO, &pc, "project created", "principal", ctx->principal, NULL);
	if (out)
		*out = p;
	return AW_OK;
}

aw_err aw_project_get(aw_store *s, const aw_ctx *ctx, aw_project *out, aw_error *err)
{
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err);
	if (e)
		return e;
	e = aw_store_project_get(t, out, err);
	aw_store_rollback(t);
	return e;
}

aw_err aw_project_list(aw_store *s, const aw_ctx *ctx, const char *after, int limit,
		       aw_project **out, int *n, aw_error *err)
{
	if (ctx->scope != AW_SCOPE_PLATFORM_ADMIN) {
		/* everyone else sees exactly their own project */
		aw_project *one = aw_calloc(1, sizeof *one);
		if (!one)
			return aw_fail(err, AW_E_NOMEM, "out of memory");
		aw_err e = AW_OK;
		*n = 0;
		if (!after || strcmp(after, ctx->project) < 0) {
			e = aw_project_get(s, ctx, one, err);
			*n = e ? 0 : 1;
		}
		if (e) {
			free(one);
			return e;
		}
		*out = one;
		return AW_OK;
	}
	return aw_store_platform_list_projects(s, ctx, after, limit, out, n, err);
}

aw_err aw_key_generate(char *secret)
{
	uint8_t raw[32];
	if (aw_random_bytes(raw, sizeof raw))
		return AW_E_INTERNAL;
	memcpy(secret, AW_KEY_PREFIX, 4);
	aw_base64url(raw, sizeof raw, secret + 4);
	return AW_OK;
}

static aw_err insert_key(aw_store *s, const aw_ctx *ctx, const char *name, aw_scope scope,
			 const char *secret, int replace_name, aw_apikey *out, aw_error *err)
{
	aw_apikey k = {0};
	aw_uuid7_str(k.key_id);
	snprintf(k.project_id, sizeof k.project_id, "%s", ctx->project);
	snprintf(k.name, sizeof k.name, "%s", name);
	k.scope = scope;
	aw_sha256_hex(secret, strlen(secret), k.key_hash);
	snprintf(k.key_prefix, sizeof k.key_prefix, "%.12s", secret);
	aw_clock_now(k.created_at);
	snprintf(k.created_by, sizeof k.created_by, "%s", ctx->principal);

	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err);
	if (e)
		return e;
	aw_project p;
	if ((e = aw_store_project_get(t, &p, err)))
		goto fail;
	/* a name is a principal: approvals and audit records name it, so it never
	 * passes to another key (the bootstrap rotation renews the same one) */
	int used = 0;
	if (!replace_name && !(e = aw_store_key_name_used(t, name, &used, err)) && used)
		e = aw_fail_at(err, AW_E_KEY_EXISTS, "/name",
			       "a key named %s existed in this project; names are never reused",
			       name);
	if (e)
		goto fail;
	if (replace_name && (e = aw_store_key_revoke_name(t, name, k.created_at, err)))
		goto fail;
	if ((e = aw_store_key_insert(t, &k, err)))
		goto fail;
	json_t *payload = json_pack("{s:s, s:s, s:s, s:s}", "key_id", k.key_id, "name", k.name,
				    "scope", aw_scope_name(scope), "prefix", k.key_prefix);
	e = aw_audit_record(t, ctx, "key.create", k.key_id, payload, err);
	json_decref(payload);
	if (e)
		goto fail;
	if ((e = aw_store_commit(t, err)))
		return e;
	aw_log(AW_LOG_INFO, ctx, "api key created", "key_id", k.key_id, "name", k.name, "scope",
	       aw_scope_name(scope), "principal", ctx->principal, NULL);
	if (out)
		*out = k;
	return AW_OK;
fail:
	aw_store_rollback(t);
	return e;
}

aw_err aw_key_create(aw_store *s, const aw_ctx *ctx, const char *name, aw_scope scope,
		     aw_apikey *out, char *secret, aw_error *err)
{
	if (!aw_ident_name_ok(name))
		return aw_fail_at(err, AW_E_REQ_INVALID, "/name",
				  "name must match [A-Za-z0-9][A-Za-z0-9._-]{0,62}");
	if (scope == AW_SCOPE_NONE)
		return aw_fail_at(err, AW_E_KEY_SCOPE, "/scope", "unknown scope");
	int platform = strcmp(ctx->project, AW_PLATFORM_PROJECT) == 0;
	if ((scope == AW_SCOPE_PLATFORM_ADMIN) != platform)
		return aw_fail_at(err, AW_E_KEY_SCOPE, "/scope",
				  "platform-admin keys exist only in __platform__, and"
				  " only they do");
	if (scope > ctx->scope)
		return aw_fail(err, AW_E_AUTH_SCOPE, "cannot grant a scope above your own");
	if (aw_key_generate(secret))
		return aw_fail(err, AW_E_INTERNAL, "no randomness available");
	aw_err e = insert_key(s, ctx, name, scope, secret, 0, out, err);
	if (e)
		memset(secret, 0, AW_KEY_SECRET_LEN + 1);
	return e;
}

aw_err aw_key_list(aw_store *s, const aw_ctx *ctx, aw_apikey **out, int *n, aw_error *err)
{
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err);
	if (e)
		return e;
	aw_project p;
	if (!(e = aw_store_project_get(t, &p, err)))
		e = aw_store_key_list(t, out, n, err);
	aw_store_rollback(t);
	return e;
}

aw_err aw_key_revoke(aw_store *s, const aw_ctx *ctx, const char *key_id, aw_error *err)
{
	if (!aw_uuid_valid(key_id))
		return aw_fail(err, AW_E_REQ_ID, "key id must be a UUID");
	char id[AW_UUID_STR_LEN + 1], now[AW_TS_LEN + 1];
	for (int i = 0; i <= AW_UUID_STR_LEN; i++)
		id[i] = (char)((key_id[i] >= 'A' && key_id[i] <= 'F') ? key_id[i] + 32 : key_id[i]);
	aw_clock_now(now);
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err);
	if (e)
		return e;
	if ((e = aw_store_key_revoke(t, id, now, err)) ||
	    (e = aw_audit_record(t, ctx, "key.revoke", id, NULL, err))) {
		aw_store_rollback(t);
		return e;
	}
	if ((e = aw_store_commit(t, err)))
		return e;
	aw_log(AW_LOG_INFO, ctx, "api key revoked", "key_id", id, "principal", ctx->principal,
	       NULL);
	return AW_OK;
}

static aw_err bootstrap_once(aw_store *s, const char *env_key, char *printed, aw_error *err);

/* Several processes of one cluster may start at once: whoever loses the race
 * to create the platform project or the bootstrap key tries again and then
 * finds the winner's. */
aw_err aw_tenancy_bootstrap(aw_store *s, const char *env_key, char *printed, aw_error *err)
{
	aw_err e = AW_OK;
	for (int attempt = 0; attempt < 5; attempt++) {
		e = bootstrap_once(s, env_key, printed, err);
		if (e != AW_E_KEY_EXISTS && e != AW_E_TENANT_EXISTS && e != AW_E_STORE_BUSY &&
		    e != AW_E_STORE_CONFLICT)
			return e;
	}
	return e;
}

static aw_err bootstrap_once(aw_store *s, const char *env_key, char *printed, aw_error *err)
{
	aw_ctx sys;
	aw_ctx_system(&sys, AW_PLATFORM_PROJECT);
	printed[0] = '\0';
	if (env_key && *env_key && !secret_shape_ok(env_key))
		return aw_fail(err, AW_E_CONFIG,
			       "AWOOOP_BOOTSTRAP_KEY must be \"awk_\" + 43 base64url characters"
			       " (try: awooop key generate)");

	/* __platform__ itself: created through the normal tenant path */
	aw_project p = {0};
	snprintf(p.project_id, sizeof p.project_id, AW_PLATFORM_PROJECT);
	aw_clock_now(p.created_at);
	snprintf(p.created_by, sizeof p.created_by, "system");
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, &sys, AW_TXN_WRITE, &t, err);
	if (e)
		return e;
	aw_project have;
	e = aw_store_project_get(t, &have, err);
	if (e == AW_E_TENANT_NOT_FOUND && !(e = aw_store_project_insert(t, &p, err)))
		e = aw_audit_record(t, &sys, "project.create", AW_PLATFORM_PROJECT, NULL, err);
	int admins = 0;
	if (!e)
		e = aw_store_key_count_scope(t, AW_SCOPE_PLATFORM_ADMIN, &admins, err);
	if (e) {
		aw_store_rollback(t);
		return e;
	}
	if ((e = aw_store_commit(t, err)))
		return e;

	if (env_key && *env_key) {
		/* one lookup: installed and active, of lower scope, revoked (rotated
		 * out by a newer bootstrap key, or through the API: it never comes
		 * back, and saying "exists" would not help), or new */
		aw_ctx probe;
		aw_ctx_system(&probe, NULL);
		char hash[AW_SHA256_HEX_LEN + 1];
		aw_sha256_hex(env_key, strlen(env_key), hash);
		aw_apikey old;
		aw_err le = aw_store_platform_lookup_key(s, &probe, hash, &old, err);
		if (le && le != AW_E_AUTH_INVALID)
			return le;
		if (!le && old.revoked_at[0])
			return aw_fail(
				err, AW_E_CONFIG,
				"AWOOOP_BOOTSTRAP_KEY was revoked at %s (rotated out or revoked"
				" through the API) and cannot be installed again; start with a"
				" new key (awooop key generate) or without the variable to"
				" keep the current keys",
				old.revoked_at);
		if (!le && old.scope == AW_SCOPE_PLATFORM_ADMIN &&
		    !strcmp(old.project_id, AW_PLATFORM_PROJECT))
			return AW_OK; /* already installed and active */
		if (!le)
			return aw_fail(err, AW_E_CONFIG,
				       "AWOOOP_BOOTSTRAP_KEY is already a key of lower scope");
		return insert_key(s, &sys, "bootstrap", AW_SCOPE_PLATFORM_ADMIN, env_key, 1, NULL,
				  err);
	}
	if (admins > 0)
		return AW_OK;
	if (aw_key_generate(printed))
		return aw_fail(err, AW_E_INTERNAL, "no randomness available");
	e = insert_key(s, &sys, "bootstrap", AW_SCOPE_PLATFORM_ADMIN, printed, 1, NULL, err);
	if (e)
		printed[0] = '\0';
	return e;
}

int aw_key_minted_by(const aw_apikey *keys, int n, const char *principal, const char *by)
{
	const char *who = principal;
	for (int depth = 0; depth < 16; depth++) {
		const aw_apikey *k = NULL;
		for (int i = n - 1; i >= 0 && !k; i--) /* the newest key of the name */
			if (!strcmp(keys[i].name, who))
				k = &keys[i];
		if (!k || !strcmp(k->created_by, who))
			return 0; /* minted outside the project, or by itself */
		if (!strcmp(k->created_by, by))
			return 1;
		who = k->created_by;
	}
	return 1; /* a chain that long is not trusted */
}
