/*
 * relay_store.c - store queries for the ADR-113 outbox relay and the fallback
 * checker. The relay crosses tenants: on PostgreSQL through the SECURITY
 * DEFINER functions of migration 0004, on SQLite directly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_internal.h"

#include "awooop/alloc.h"
#include "awooop/str.h"

aw_err aw_store_relay_begin(aw_store *s, aw_txn **out, aw_error *err)
{
	aw_ctx sys;
	aw_ctx_system(&sys, NULL);
	snprintf(sys.principal, sizeof sys.principal, "relay");
	return aw_store_begin(s, &sys, AW_TXN_WRITE, out, err);
}

aw_err aw_store_relay_claim(aw_txn *t, int limit, aw_outbox_event **out, int *n, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_INT(limit)};
	const char *sql =
		txn_dialect(t) == AW_DIALECT_PG
			? "SELECT event_id, seq, event_type, project_id, contract_family, contract_id,"
			  " old_revision_id, new_revision_id, created_at, relay_attempts"
			  " FROM platform_outbox_claim($1)"
			: "SELECT event_id, seq, event_type, project_id, contract_family, contract_id,"
			  " old_revision_id, new_revision_id, created_at, relay_attempts"
			  " FROM contract_outbox WHERE delivered_at IS NULL ORDER BY seq LIMIT $1";
	aw_err e = txn_exec(t, sql, 1, p, &r, err);
	if (e)
		return e;
	aw_outbox_event *arr = aw_calloc((size_t)r->nrows + 1, sizeof *arr);
	if (!arr) {
		rows_free(r);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	for (int i = 0; i < r->nrows; i++)
		outbox_from_row(&arr[i], r, i, 9, -1);
	*out = arr;
	*n = r->nrows;
	rows_free(r);
	return AW_OK;
}

aw_err aw_store_relay_done(aw_txn *t, const char *event_id, int delivered, aw_error *err)
{
	if (txn_dialect(t) == AW_DIALECT_PG) {
		aw_val p[] = {AW_TEXT(event_id), AW_TEXT(delivered ? "true" : "false")};
		return txn_exec(t, "SELECT platform_outbox_done($1, $2)", 2, p, NULL, err);
	}
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	aw_val p[] = {AW_TEXT(event_id), AW_TEXT(now)};
	return txn_exec(t,
			delivered
				? "UPDATE contract_outbox SET delivered_at = $2 WHERE event_id = $1"
				: "UPDATE contract_outbox SET relay_attempts = relay_attempts + 1"
				  " WHERE event_id = $1",
			delivered ? 2 : 1, p, NULL, err);
}

aw_err aw_store_relay_prune(aw_store *s, const char *before, int64_t *n, aw_error *err)
{
	aw_ctx sys;
	aw_ctx_system(&sys, NULL);
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(before)};
	aw_err e;
	if (s->drv->dialect == AW_DIALECT_PG) {
		e = store_exec1(s, &sys, "SELECT platform_outbox_prune($1)", 1, p, &r, err);
		if (!e)
			*n = cell_ll(r, 0, 0);
	} else {
		e = store_exec1(s, &sys,
				"DELETE FROM contract_outbox WHERE delivered_at IS NOT NULL AND"
				" delivered_at < $1",
				1, p, &r, err);
		if (!e)
			*n = r->affected;
	}
	rows_free(r);
	return e;
}

aw_err aw_store_relay_stats(aw_store *s, int64_t *undelivered, char *oldest, aw_error *err)
{
	aw_ctx sys;
	aw_ctx_system(&sys, NULL);
	aw_rows *r = NULL;
	aw_err e = store_exec1(s, &sys,
			       s->drv->dialect == AW_DIALECT_PG
				       ? "SELECT undelivered, oldest FROM platform_outbox_stats()"
				       : "SELECT count(*), min(created_at) FROM contract_outbox"
					 " WHERE delivered_at IS NULL",
			       0, NULL, &r, err);
	if (!e) {
		*undelivered = cell_ll(r, 0, 0);
		cell_copy(oldest, AW_TS_LEN + 1, r, 0, 1);
	}
	rows_free(r);
	return e;
}

aw_err aw_store_active_list(aw_txn *t, aw_active_pointer **out, int *n, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project)};
	aw_err e = txn_exec(t,
			    "SELECT family, contract_id, revision_id FROM active_revisions"
			    " WHERE project_id = $1",
			    1, p, &r, err);
	if (e)
		return e;
	static const aw_text_field f[] = {AW_TEXT_FIELD(aw_active_pointer, family),
					  AW_TEXT_FIELD(aw_active_pointer, contract_id),
					  AW_TEXT_FIELD(aw_active_pointer, revision_id)};
	return rows_to_array(r, sizeof **out, f, 3, (void **)out, n, err);
}

struct aw_store_listener {
	aw_store *s;
	aw_conn *c;
	int others_only;
	char channel[64];
};

static int listener_connect(aw_store_listener *l)
{
	aw_error err;
	if (l->c)
		l->s->drv->disconnect(l->c);
	l->c = NULL;
	if (l->s->drv->connect(l->s->url, &l->c, &err) != AW_OK)
		return -1;
	if (l->s->drv->listen(l->c, l->channel, &err) != AW_OK) {
		l->s->drv->disconnect(l->c);
		l->c = NULL;
		return -1;
	}
	return 0;
}

aw_store_listener *aw_store_listen(aw_store *s, const char *channel, int others_only)
{
	if (!s->drv->listen)
		return NULL;
	aw_store_listener *l = aw_calloc(1, sizeof *l);
	if (l && AW_STR_COPY(l->channel, channel) < 0) { /* as if out of memory */
		free(l);
		return NULL;
	}
	if (!l)
		return NULL;
	l->s = s;
	l->others_only = others_only;
	listener_connect(l); /* retried in wait() if the database is down now */
	return l;
}

int aw_store_listener_wait(aw_store_listener *l, int timeout_ms)
{
	if (!l->c && listener_connect(l) != 0) {
		struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
		nanosleep(&ts, NULL);
		return 0;
	}
	int rc = l->s->drv->wait(l->c, timeout_ms, l->others_only ? store_own_pid : NULL, l->s);
	if (rc < 0) {
		l->s->drv->disconnect(l->c);
		l->c = NULL;
		return 1; /* after a break, assume something was missed */
	}
	return rc;
}

void aw_store_listener_close(aw_store_listener *l)
{
	if (!l)
		return;
	if (l->c)
		l->s->drv->disconnect(l->c);
	free(l);
}
