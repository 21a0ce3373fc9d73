/*
 * store/tenancy.h - projects and API keys (only the SHA-256 of a key is stored).
 * Part of the store interface (store.h: open, migrate, transactions); only
 * the services of this domain include it. Same conventions as store.h: every
 * call runs in the caller's transaction for its project; arrays returned are
 * malloc'd and freed with the *_free function named here or free().
 */
#ifndef AWOOOP_STORE_TENANCY_H
#define AWOOOP_STORE_TENANCY_H

#include "awooop/store.h"

/* ---- projects ---- */
typedef struct {
	char project_id[AW_PROJECT_MAX + 1];
	char created_at[AW_TS_LEN + 1];
	char created_by[AW_PROJECT_MAX + 1];
} aw_project;

/* The txn's project must be p->project_id. AW_E_TENANT_EXISTS if present. */
aw_err aw_store_project_insert(aw_txn *t, const aw_project *p, aw_error *err);
/* The txn's project; AW_E_TENANT_NOT_FOUND when it does not exist. */
aw_err aw_store_project_get(aw_txn *t, aw_project *out, aw_error *err);
/* Platform path: projects with id > after (NULL = from the start), by id. */
aw_err aw_store_platform_list_projects(aw_store *s, const aw_ctx *ctx, const char *after, int limit,
				       aw_project **out, int *n, aw_error *err);

/* ---- API keys (only the SHA-256 of a key is ever stored) ---- */
typedef struct {
	char key_id[AW_UUID_STR_LEN + 1];
	char project_id[AW_PROJECT_MAX + 1];
	char name[AW_PROJECT_MAX + 1];
	aw_scope scope;
	char key_hash[65];
	char key_prefix[16];
	char created_at[AW_TS_LEN + 1];
	char created_by[AW_PROJECT_MAX + 1];
	char revoked_at[AW_TS_LEN + 1]; /* "" while active */
	char expires_at[AW_TS_LEN + 1]; /* "" never */
	char limits[4096];		/* the virtual key's limits, JSON ("{}": none) */
} aw_apikey;

/* AW_E_KEY_EXISTS when an active key of that name exists in the project. */
aw_err aw_store_key_insert(aw_txn *t, const aw_apikey *k, aw_error *err);
aw_err aw_store_key_list(aw_txn *t, aw_apikey **out, int *n, aw_error *err);
/* AW_E_KEY_NOT_FOUND if absent in the txn's project, AW_E_KEY_REVOKED if already. */
aw_err aw_store_key_revoke(aw_txn *t, const char *key_id, const char *when, aw_error *err);
/* *used = 1 when any key of the project, active or revoked, had this name. */
aw_err aw_store_key_name_used(aw_txn *t, const char *name, int *used, aw_error *err);
/* Revokes the active key of that name, if any (bootstrap rotation). */
aw_err aw_store_key_revoke_name(aw_txn *t, const char *name, const char *when, aw_error *err);
/* Sets a key's expiry ("" never) and limits (JSON). AW_E_KEY_NOT_FOUND if
 * absent in the txn's project, AW_E_KEY_REVOKED if revoked. */
aw_err aw_store_key_set_limits(aw_txn *t, const char *key_id, const char *expires_at,
			       const char *limits, aw_error *err);
/* One key of the txn's project; AW_E_KEY_NOT_FOUND if absent. */
aw_err aw_store_key_get(aw_txn *t, const char *key_id, aw_apikey *out, aw_error *err);
/* Active keys of a scope in the txn's project. */
aw_err aw_store_key_count_scope(aw_txn *t, aw_scope scope, int *n, aw_error *err);
/* Platform path: finds a key by hash across projects. AW_E_AUTH_INVALID if none. */
aw_err aw_store_platform_lookup_key(aw_store *s, const aw_ctx *ctx, const char *key_hash,
				    aw_apikey *out, aw_error *err);

#endif
