/*
 * tenancy.c - the tenancy service (see tenancy.h): who a caller is, what it may
 * touch, and the project and key lifecycle. Written against store.h only.
 */
#include "awooop/alloc.h"
#include "awooop/str.h"
#include "awooop/tenancy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/audit.h"
#include "awooop/clock.h"
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
	return aw_tenancy_authenticate_key(s, secret, ctx, NULL, err);
}

aw_err aw_tenancy_authenticate_key(aw_store *s, const char *secret, aw_ctx *ctx, aw_key_limits *lim,
				   aw_error *err)
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
	aw_key_limits l;
	aw_key_limits_load(k.limits, k.expires_at, &l);
	if (aw_key_expired(&l, aw_clock_wall_ms()))
		return aw_fail(err, AW_E_AUTH_EXPIRED, "this API key expired at %s", l.expires_at);
	if (lim)
		*lim = l;
	AW_COPY_ARRAY(ctx->project, k.project_id);
	AW_COPY_ARRAY(ctx->principal, k.name);
	AW_COPY_ARRAY(ctx->key_id, k.key_id);
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
	if (AW_STR_COPY(p.project_id, id) < 0) /* aw_ident_project_ok: at most 63 */
		return aw_fail_at(err, AW_E_TENANT_SLUG, "/id", "project id is too long");
	aw_clock_now(p.created_at);
	AW_COPY_ARRAY(p.created_by, ctx->principal);
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

/* The stored form of lim into k (AW_E_KEY_LIMITS when it would not fit). */
static aw_err limits_into(const aw_key_limits *lim, aw_apikey *k, aw_error *err)
{
	snprintf(k->limits, sizeof k->limits, "{}");
	k->expires_at[0] = '\0';
	if (!lim)
		return AW_OK;
	json_t *doc = aw_key_limits_json(lim);
	char *txt = doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(doc);
	if (!txt)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	size_t n = strlen(txt);
	if (n < sizeof k->limits)
		memcpy(k->limits, txt, n + 1);
	free(txt);
	if (n >= sizeof k->limits)
		return aw_fail_at(err, AW_E_KEY_LIMITS, "", "the key's limits are too long");
	AW_COPY_ARRAY(k->expires_at, lim->expires_at);
	return AW_OK;
}

static aw_err insert_key(aw_store *s, const aw_ctx *ctx, const char *name, aw_scope scope,
			 const char *secret, int replace_name, const aw_key_limits *lim,
			 aw_apikey *out, aw_error *err)
{
	aw_apikey k = {0};
	aw_err le = limits_into(lim, &k, err);
	if (le)
		return le;
	aw_uuid7_str(k.key_id);
	AW_COPY_ARRAY(k.project_id, ctx->project);
	if (AW_STR_COPY(k.name, name) < 0) /* aw_ident_name_ok: at most 63 */
		return aw_fail_at(err, AW_E_REQ_INVALID, "/name", "key name is too long");
	k.scope = scope;
	aw_sha256_hex(secret, strlen(secret), k.key_hash);
	snprintf(k.key_prefix, sizeof k.key_prefix, "%.12s", secret);
	aw_clock_now(k.created_at);
	AW_COPY_ARRAY(k.created_by, ctx->principal);

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
	json_t *payload = json_pack("{s:s, s:s, s:s, s:s, s:o}", "key_id", k.key_id, "name", k.name,
				    "scope", aw_scope_name(scope), "prefix", k.key_prefix, "limits",
				    json_loads(k.limits, 0, NULL));
	if (payload && k.expires_at[0])
		json_object_set_new(payload, "expires_at", json_string(k.expires_at));
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
	return aw_key_create_limited(s, ctx, name, scope, NULL, out, secret, err);
}

aw_err aw_key_create_limited(aw_store *s, const aw_ctx *ctx, const char *name, aw_scope scope,
			     const aw_key_limits *lim, aw_apikey *out, char *secret, aw_error *err)
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
	if (lim && aw_key_expired(lim, aw_clock_wall_ms()))
		return aw_fail_at(err, AW_E_KEY_LIMITS, "/expires_at",
				  "expires_at is in the past: the key would never work");
	aw_err e = insert_key(s, ctx, name, scope, secret, 0, lim, out, err);
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

/* A key id as the store keeps it (lower case), or AW_E_REQ_ID. */
static aw_err key_id_norm(const char *key_id, char id[AW_UUID_STR_LEN + 1], aw_error *err)
{
	if (!aw_uuid_valid(key_id))
		return aw_fail(err, AW_E_REQ_ID, "key id must be a UUID");
	for (int i = 0; i <= AW_UUID_STR_LEN; i++)
		id[i] = (char)((key_id[i] >= 'A' && key_id[i] <= 'F') ? key_id[i] + 32 : key_id[i]);
	return AW_OK;
}

aw_err aw_key_get(aw_store *s, const aw_ctx *ctx, const char *key_id, aw_apikey *out, aw_error *err)
{
	char id[AW_UUID_STR_LEN + 1];
	aw_err e = key_id_norm(key_id, id, err);
	aw_txn *t = NULL;
	if (!e)
		e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err);
	if (!e)
		e = aw_store_key_get(t, id, out, err);
	if (t)
		aw_store_rollback(t);
	return e;
}

/* The limits document of k with expires_at, the base of a merge patch. */
static json_t *limits_doc(const aw_apikey *k)
{
	json_t *doc = json_loads(k->limits, 0, NULL);
	if (!json_is_object(doc)) {
		json_decref(doc);
		doc = json_object();
	}
	if (doc && k->expires_at[0])
		json_object_set_new(doc, "expires_at", json_string(k->expires_at));
	return doc;
}

/* RFC 7386 over a document whose objects are at most two deep. */
static void merge_patch(json_t *target, const json_t *patch)
{
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)patch, k, v) {
		if (json_is_null(v)) {
			json_object_del(target, k);
		} else if (json_is_object(v) && json_is_object(json_object_get(target, k))) {
			merge_patch(json_object_get(target, k), v);
		} else {
			json_t *c = json_deep_copy(v);
			json_object_set_new(target, k, c);
		}
	}
}

aw_err aw_key_update(aw_store *s, const aw_ctx *ctx, const char *key_id, const json_t *patch,
		     aw_apikey *out, aw_error *err)
{
	char id[AW_UUID_STR_LEN + 1];
	aw_err e = key_id_norm(key_id, id, err);
	if (e)
		return e;
	if (!json_is_object(patch))
		return aw_fail_at(err, AW_E_KEY_LIMITS, "", "a key's limits are a JSON object");
	/* the merged document is checked: its pointers are the patch's paths
	 * (an expiry moved into the past is how a key is expired at once) */
	aw_key_limits lim;
	json_t *base = NULL, *before = NULL;
	aw_txn *t = NULL;
	aw_apikey k;
	if ((e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err)) ||
	    (e = aw_store_key_get(t, id, &k, err)))
		goto fail;
	if (k.revoked_at[0]) {
		e = aw_fail(err, AW_E_KEY_REVOKED, "key revoked: its limits are final");
		goto fail;
	}
	before = limits_doc(&k);
	base = json_deep_copy(before);
	if (!base) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
		goto fail;
	}
	merge_patch(base, patch);
	if ((e = aw_key_limits_parse(base, NULL, &lim, err)) || (e = limits_into(&lim, &k, err)))
		goto fail;
	json_t *payload =
		json_pack("{s:s,s:O,s:o}", "key_id", id, "before", before, "after", limits_doc(&k));
	if ((e = aw_store_key_set_limits(t, id, k.expires_at, k.limits, err)) ||
	    (e = aw_audit_record(t, ctx, "key.update", id, payload, err))) {
		json_decref(payload);
		goto fail;
	}
	json_decref(payload);
	if ((e = aw_store_commit(t, err))) {
		t = NULL;
		goto fail;
	}
	aw_log(AW_LOG_INFO, ctx, "api key limits changed", "key_id", id, "principal",
	       ctx->principal, NULL);
	if (out)
		*out = k;
	json_decref(base);
	json_decref(before);
	return AW_OK;
fail:
	if (t)
		aw_store_rollback(t);
	json_decref(base);
	json_decref(before);
	return e;
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
				  NULL, err);
	}
	if (admins > 0)
		return AW_OK;
	if (aw_key_generate(printed))
		return aw_fail(err, AW_E_INTERNAL, "no randomness available");
	e = insert_key(s, &sys, "bootstrap", AW_SCOPE_PLATFORM_ADMIN, printed, 1, NULL, NULL, err);
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
