/*
 * audit_store.c - store queries for the audit trail. The chain logic (hashing,
 * redaction, verification) is in src/audit/; this file only reads and writes
 * rows of the txn's project. The head row serialises appends per project: on
 * PostgreSQL audit_append() (migration 0007; audit_append_one(), 0020, for a
 * single record) locks it and extends the chain in the database; on SQLite
 * the single writer does, and the chain is extended from C
 * (aw_store_audit_head + aw_store_audit_insert_many).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/buf.h"
#include "store_internal.h"

#define GENESIS "0000000000000000000000000000000000000000000000000000000000000000"

void aw_audit_rows_free(aw_audit_row *rows, int n)
{
	if (!rows)
		return;
	for (int i = 0; i < n; i++) {
		free(rows[i].target);
		free(rows[i].payload);
	}
	free(rows);
}

aw_err aw_store_audit_head(aw_txn *t, int64_t *seq, char *hash, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project)};
	aw_err e = txn_exec(t, "SELECT seq, hash FROM audit_heads WHERE project_id = $1", 1, v, &r,
			    err);
	if (!e) {
		if (r->nrows == 0) {
			*seq = 0;
			memcpy(hash, GENESIS, sizeof GENESIS);
		} else {
			*seq = cell_ll(r, 0, 0);
			cell_copy(hash, 65, r, 0, 1);
		}
	}
	rows_free(r);
	return e;
}

/* Runs a SELECT of the eleven audit columns and returns its rows. */
static aw_err read_rows(aw_txn *t, const char *sql, int n_params, const aw_val *v,
			aw_audit_row **out, int *n, aw_error *err)
{
	aw_rows *r = NULL;
	aw_err e = txn_exec(t, sql, n_params, v, &r, err);
	if (e) {
		rows_free(r);
		return e;
	}
	aw_audit_row *rows = aw_calloc((size_t)r->nrows + 1, sizeof *rows);
	if (!rows) {
		rows_free(r);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	for (int i = 0; i < r->nrows; i++) {
		aw_audit_row *a = &rows[i];
		cell_copy(a->event_id, sizeof a->event_id, r, i, 0);
		cell_copy(a->project_id, sizeof a->project_id, r, i, 1);
		a->seq = cell_ll(r, i, 2);
		cell_copy(a->ts, sizeof a->ts, r, i, 3);
		cell_copy(a->actor, sizeof a->actor, r, i, 4);
		cell_copy(a->action, sizeof a->action, r, i, 5);
		a->target = aw_strdup(rows_get(r, i, 6) ? rows_get(r, i, 6) : "");
		cell_copy(a->trace_id, sizeof a->trace_id, r, i, 7);
		a->payload = aw_strdup(rows_get(r, i, 8) ? rows_get(r, i, 8) : "");
		cell_copy(a->prev_hash, sizeof a->prev_hash, r, i, 9);
		cell_copy(a->hash, sizeof a->hash, r, i, 10);
		if (!a->target || !a->payload) {
			aw_audit_rows_free(rows, r->nrows);
			rows_free(r);
			return aw_fail(err, AW_E_NOMEM, "out of memory");
		}
	}
	*out = rows;
	*n = r->nrows;
	rows_free(r);
	return AW_OK;
}

aw_err aw_store_audit_list(aw_txn *t, int64_t after_seq, const char *action, const char *since,
			   int limit, aw_audit_row **out, int *n, aw_error *err)
{
	aw_audit_query q = {.cursor = after_seq, .since = since};
	if (action && *action)
		q.actions[q.nactions++] = action;
	return aw_store_audit_query(t, &q, limit, out, n, err);
}

static int given(const char *s)
{
	return s && *s;
}

aw_err aw_store_audit_query(aw_txn *t, const aw_audit_query *q, int limit, aw_audit_row **out,
			    int *n, aw_error *err)
{
	if (q->nactions < 0 || q->nactions > AW_AUDIT_ACTIONS_MAX)
		return aw_fail(err, AW_E_REQ_INVALID, "at most %d actions", AW_AUDIT_ACTIONS_MAX);
	int pg = txn_dialect(t) == AW_DIALECT_PG;
	/* "!ok": every outcome but ok (a record with no outcome is no call) */
	int not = given(q->outcome) && q->outcome[0] == '!';
	const char *outcome = not ? q->outcome + 1 : q->outcome;
	aw_val v[3 + AW_AUDIT_ACTIONS_MAX + 6] = {AW_TEXT(t->ctx.project), AW_INT(limit)};
	int np = 2;
	aw_buf sql = AW_BUF_INIT(4096);
	aw_buf_addf(&sql, "SELECT event_id, project_id, seq, ts, actor, action, target, trace_id,"
			  " payload, prev_hash, hash FROM audit_events WHERE project_id = $1");
	/* only the filters asked for, so every parameter has a type on postgres */
	if (q->cursor > 0) {
		v[np++] = AW_INT(q->cursor);
		aw_buf_addf(&sql, " AND seq %s $%d", q->newest_first ? "<" : ">", np);
	}
	for (int i = 0; i < q->nactions; i++) {
		v[np++] = AW_TEXT(q->actions[i]);
		aw_buf_addf(&sql, "%s$%d%s", i ? ", " : " AND action IN (", np,
			    i == q->nactions - 1 ? ")" : "");
	}
	const struct {
		const char *val, *col;
	} cols[] = {{q->since, "ts >= $%d"},
		    {q->until, "ts < $%d"},
		    {q->actor, "actor = $%d"},
		    {q->target, "target = $%d"},
		    {outcome, pg ? (not ? "payload::jsonb ->> 'outcome' <> $%d"
					: "payload::jsonb ->> 'outcome' = $%d")
				 : (not ? "json_extract(payload, '$.outcome') <> $%d"
					: "json_extract(payload, '$.outcome') = $%d")},
		    {q->run_id, pg ? "payload::jsonb ->> 'run_id' = $%d"
				   : "json_extract(payload, '$.run_id') = $%d"}};
	for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
		if (!given(cols[i].val))
			continue;
		v[np++] = AW_TEXT(cols[i].val);
		aw_buf_addf(&sql, " AND ");
		aw_buf_addf(&sql, cols[i].col, np);
	}
	aw_buf_addf(&sql, " ORDER BY seq%s LIMIT $2", q->newest_first ? " DESC" : "");
	aw_err e = aw_buf_err(&sql) ? aw_fail(err, aw_buf_err(&sql), "audit query too long")
				    : read_rows(t, aw_buf_str(&sql), np, v, out, n, err);
	aw_buf_free(&sql);
	return e;
}

aw_err aw_store_audit_by_target(aw_txn *t, const char *target, int limit, aw_audit_row **out,
				int *n, aw_error *err)
{
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(target), AW_INT(limit)};
	return read_rows(
		t,
		"SELECT event_id, project_id, seq, ts, actor, action, target, trace_id,"
		" payload, prev_hash, hash FROM audit_events WHERE project_id = $1"
		" AND target = $2"
		" UNION ALL SELECT e.event_id, e.project_id, e.seq, e.ts, e.actor, e.action,"
		" e.target, e.trace_id, e.payload, e.prev_hash, e.hash"
		" FROM audit_targets x JOIN audit_events e ON e.event_id = x.event_id"
		" WHERE x.project_id = $1 AND x.target = $2 AND e.project_id = $1"
		" ORDER BY 3 LIMIT $3",
		3, v, out, n, err);
}

#define TARGET_CHUNK 500

aw_err aw_store_audit_targets_put(aw_txn *t, const char *event_id, const char *const *targets,
				  int n, aw_error *err)
{
	size_t cap = 128 + TARGET_CHUNK * 24;
	char *sql = aw_malloc(cap);
	aw_val *v = aw_malloc(sizeof *v * (TARGET_CHUNK + 2));
	aw_err e = AW_OK;
	if (!sql || !v)
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	for (int base = 0; base < n && !e; base += TARGET_CHUNK) {
		int k = n - base < TARGET_CHUNK ? n - base : TARGET_CHUNK;
		v[0] = AW_TEXT(t->ctx.project);
		v[1] = AW_TEXT(event_id);
		int o = snprintf(
			sql, cap,
			"INSERT INTO audit_targets (project_id, event_id, target) VALUES ");
		for (int i = 0; i < k; i++) {
			v[i + 2] = AW_TEXT(targets[base + i]);
			o += snprintf(sql + o, cap - (size_t)o, "%s($1, $2, $%d)", i ? ", " : "",
				      i + 3);
		}
		e = txn_defer(t, sql, k + 2, v, err);
	}
	free(sql);
	free(v);
	return e;
}

#define AUDIT_COLS 11
#define AUDIT_CHUNK 100

aw_err aw_store_audit_insert_many(aw_txn *t, const aw_audit_row *rows, int n, aw_error *err)
{
	if (n <= 0)
		return AW_OK;
	size_t cap = 256 + AUDIT_CHUNK * 100;
	char *sql = aw_malloc(cap);
	aw_val *v = aw_malloc(sizeof *v * AUDIT_CHUNK * AUDIT_COLS);
	aw_err e = AW_OK;
	if (!sql || !v) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
		goto out;
	}
	for (int base = 0; base < n && !e; base += AUDIT_CHUNK) {
		int k = n - base < AUDIT_CHUNK ? n - base : AUDIT_CHUNK;
		int o = snprintf(sql, cap,
				 "INSERT INTO audit_events (project_id, event_id, seq, ts, actor,"
				 " action, target, trace_id, payload, prev_hash, hash) VALUES ");
		for (int i = 0; i < k; i++) {
			const aw_audit_row *a = &rows[base + i];
			aw_val *p = &v[i * AUDIT_COLS];
			p[0] = AW_TEXT(t->ctx.project);
			p[1] = AW_TEXT(a->event_id);
			p[2] = AW_INT(a->seq);
			p[3] = AW_TEXT(a->ts);
			p[4] = AW_TEXT(a->actor);
			p[5] = AW_TEXT(a->action);
			p[6] = AW_TEXT(a->target);
			p[7] = AW_TEXT(a->trace_id);
			p[8] = AW_TEXT(a->payload);
			p[9] = AW_TEXT(a->prev_hash);
			p[10] = AW_TEXT(a->hash);
			o += snprintf(sql + o, cap - (size_t)o, "%s(", i ? ", " : "");
			sql_params(sql, cap, &o, i * AUDIT_COLS + 1, AUDIT_COLS);
			o += snprintf(sql + o, cap - (size_t)o, ")");
		}
		e = txn_exec(t, sql, k * AUDIT_COLS, v, NULL, err);
	}
	if (!e) {
		const aw_audit_row *last = &rows[n - 1];
		aw_val h[] = {AW_TEXT(t->ctx.project), AW_INT(last->seq), AW_TEXT(last->hash)};
		e = txn_exec(t,
			     "INSERT INTO audit_heads (project_id, seq, hash) VALUES ($1, $2, $3)"
			     " ON CONFLICT (project_id) DO UPDATE SET seq = excluded.seq,"
			     " hash = excluded.hash",
			     3, h, NULL, err);
	}
out:
	free(sql);
	free(v);
	return e;
}

int aw_store_audit_in_db(const aw_txn *t)
{
	return txn_dialect(t) == AW_DIALECT_PG;
}

/* The records as audit_append()'s JSON array, written directly: a round's
 * record carries a payload of tens of kB, and building it as a jansson tree
 * to dump it again cost the workers more than the rest of the append. */
static void field_json(aw_buf *b, const char *name, const char *v, int first)
{
	aw_buf_adds(b, first ? "{\"" : ",\"");
	aw_buf_adds(b, name);
	aw_buf_adds(b, "\":");
	aw_buf_add_jstr(b, v ? v : "", v ? strlen(v) : 0);
}

aw_err aw_store_audit_append(aw_txn *t, const aw_audit_row *rows, int n, aw_error *err)
{
	if (n == 1) { /* one record: its fields as parameters (migration 0020) */
		const aw_audit_row *a = rows;
		aw_val v[] = {AW_TEXT(a->event_id),
			      AW_TEXT(a->ts),
			      AW_TEXT(a->actor),
			      AW_TEXT(a->action),
			      AW_TEXT(a->target ? a->target : ""),
			      AW_TEXT(a->trace_id),
			      AW_TEXT(a->payload ? a->payload : "")};
		return txn_defer(t, "SELECT audit_append_one($1, $2, $3, $4, $5, $6, $7)", 7, v,
				 err);
	}
	aw_buf b = AW_BUF_INIT((size_t)1 << 30);
	aw_buf_adds(&b, "[");
	for (int i = 0; i < n; i++) {
		const aw_audit_row *a = &rows[i];
		if (i)
			aw_buf_adds(&b, ",");
		field_json(&b, "event_id", a->event_id, 1);
		field_json(&b, "ts", a->ts, 0);
		field_json(&b, "actor", a->actor, 0);
		field_json(&b, "action", a->action, 0);
		field_json(&b, "target", a->target, 0);
		field_json(&b, "trace_id", a->trace_id, 0);
		field_json(&b, "payload", a->payload, 0);
		aw_buf_adds(&b, "}");
	}
	aw_buf_adds(&b, "]");
	if (aw_buf_err(&b)) {
		aw_buf_free(&b);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	aw_val v[] = {AW_TEXT(aw_buf_str(&b))};
	aw_err e = txn_defer(t, "SELECT audit_append($1)", 1, v, err);
	aw_buf_free(&b);
	return e;
}
