/*
 * store/redaction.h - a project's custom redaction patterns (redaction.h is
 * the service). Same conventions as store.h: every call runs in the caller's
 * transaction for its project; the *_platform_* call is the documented
 * cross-tenant path (the pollers' version list).
 */
#ifndef AWOOOP_STORE_REDACTION_H
#define AWOOOP_STORE_REDACTION_H

#include "awooop/store.h"

/* A project's list as stored. version 0: the project never had one. */
typedef struct {
	int64_t version;
	char *patterns; /* JSON text, malloc'd (free); NULL when version is 0 */
	char updated_at[AW_TS_LEN + 1];
	char updated_by[AW_PROJECT_MAX + 1];
} aw_redaction_row;

/* The txn's project's list (out->version 0 and out->patterns NULL: none). */
aw_err aw_store_redaction_get(aw_txn *t, aw_redaction_row *out, aw_error *err);
/* Writes the txn's project's list (patterns: JSON text, already validated)
 * as the next version, which *version receives (1 for the first list; a
 * concurrent writer gets the one after: versions never repeat). */
aw_err aw_store_redaction_put(aw_txn *t, const char *patterns, const char *when, const char *by,
			      int64_t *version, aw_error *err);

/* Platform path: every project's list version (projects without a list are
 * absent). *out is malloc'd (free). */
typedef struct {
	char project_id[AW_PROJECT_MAX + 1];
	int64_t version;
} aw_redaction_version;
aw_err aw_store_platform_redaction_versions(aw_store *s, const aw_ctx *ctx,
					    aw_redaction_version **out, int *n, aw_error *err);

#endif
