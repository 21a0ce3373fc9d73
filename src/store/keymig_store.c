/*
 * keymig_store.c - store queries for the Redis key migration phases (INV-1).
 */
#include <stdio.h>
#include <string.h>

#include "store_internal.h"

aw_err aw_store_keymig_get(aw_txn *t, const char *pattern, char *phase, size_t cap, char *since,
			   aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(pattern)};
	aw_err e = txn_exec(t,
			    "SELECT phase, phase_since FROM key_migrations WHERE project_id = $1"
			    " AND pattern = $2",
			    2, p, &r, err);
	if (!e) {
		snprintf(phase, cap, "none");
		since[0] = '\0';
		if (r->nrows) {
			cell_copy(phase, cap, r, 0, 0);
			cell_copy(since, AW_TS_LEN + 1, r, 0, 1);
		}
	}
	rows_free(r);
	return e;
}

aw_err aw_store_keymig_set(aw_txn *t, const char *pattern, const char *phase, const char *since,
			   const char *by, aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(pattern), AW_TEXT(phase), AW_TEXT(since),
		      AW_TEXT(by)};
	return txn_exec(t,
			"INSERT INTO key_migrations (project_id, pattern, phase, phase_since,"
			" updated_by) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (project_id, pattern)"
			" DO UPDATE SET phase = excluded.phase, phase_since = excluded.phase_since,"
			" updated_by = excluded.updated_by",
			5, p, NULL, err);
}
