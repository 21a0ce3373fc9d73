/*
 * run_store.c - store queries for the run runtime: runs, their step journal and
 * idempotency keys in the txn's project, and the workers' platform path
 * (claim, heartbeat, expired leases) - on PostgreSQL through the SECURITY
 * DEFINER functions of migration 0006, on SQLite directly under its write lock.
 * Batches of runs are addressed with "run_id IN ($k, ...)" lists.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/buf.h"
#include "awooop/str.h"
#include "store_internal.h"

#define RUN_COLS                                                                              \
	"project_id, run_id, state, mode, workflow, input, priority, attempts, max_attempts," \
	" timeout_s, trace_id, lease_owner, lease_expires_at, run_after, error_code,"         \
	" created_at, updated_at, started_at, finished_at, queue"
#define STEP_COLS                                                                     \
	"run_id, step_no, kind, state, idempotency_key, result, attempt, error_code," \
	" started_at, finished_at, tries"

void aw_run_free(aw_run *r)
{
	if (!r)
		return;
	free(r->workflow);
	free(r->input);
	r->workflow = r->input = NULL;
}

void aw_runs_free(aw_run *r, int n)
{
	if (!r)
		return;
	for (int i = 0; i < n; i++)
		aw_run_free(&r[i]);
	free(r);
}

void aw_run_steps_free(aw_run_step *s, int n)
{
	if (!s)
		return;
	for (int i = 0; i < n; i++)
		free(s[i].result);
	free(s);
}

void aw_run_claims_free(aw_run_claim *c, int n)
{
	if (!c)
		return;
	for (int i = 0; i < n; i++) {
		free(c[i].workflow);
		free(c[i].input);
	}
	free(c);
}

static char *dup_cell(const aw_rows *r, int row, int col)
{
	const char *v = rows_get(r, row, col);
	return v ? aw_strdup(v) : NULL;
}

static int int_cell(const aw_rows *r, int row, int col)
{
	return (int)cell_ll(r, row, col);
}

/* A boolean cell: PostgreSQL's t/f, SQLite's 1/0. */
static int bool_cell(const aw_rows *r, int row, int col)
{
	const char *v = rows_get(r, row, col);
	return v && (*v == 't' || *v == '1');
}

static int run_from_row(aw_run *v, const aw_rows *r, int i)
{
	cell_copy(v->project_id, sizeof v->project_id, r, i, 0);
	cell_copy(v->run_id, sizeof v->run_id, r, i, 1);
	cell_copy(v->state, sizeof v->state, r, i, 2);
	cell_copy(v->mode, sizeof v->mode, r, i, 3);
	v->workflow = dup_cell(r, i, 4);
	v->input = dup_cell(r, i, 5);
	v->priority = int_cell(r, i, 6);
	v->attempts = int_cell(r, i, 7);
	v->max_attempts = int_cell(r, i, 8);
	v->timeout_s = int_cell(r, i, 9);
	cell_copy(v->trace_id, sizeof v->trace_id, r, i, 10);
	cell_copy(v->lease_owner, sizeof v->lease_owner, r, i, 11);
	cell_copy(v->lease_expires_at, sizeof v->lease_expires_at, r, i, 12);
	cell_copy(v->run_after, sizeof v->run_after, r, i, 13);
	cell_copy(v->error_code, sizeof v->error_code, r, i, 14);
	cell_copy(v->created_at, sizeof v->created_at, r, i, 15);
	cell_copy(v->updated_at, sizeof v->updated_at, r, i, 16);
	cell_copy(v->started_at, sizeof v->started_at, r, i, 17);
	cell_copy(v->finished_at, sizeof v->finished_at, r, i, 18);
	cell_copy(v->queue, sizeof v->queue, r, i, 19);
	return v->workflow && (v->input || !rows_get(r, i, 5)) ? 0 : -1;
}

/* Runs head "($k, ...)" tail with the n ids as the list after the nfixed
 * parameters that head refers to as $1..$nfixed; with out NULL the statement
 * is deferred (txn_defer: on PostgreSQL, sent with the next one). */
static aw_err exec_in(aw_txn *t, const char *head, const aw_val *fixed, int nfixed,
		      char (*ids)[AW_UUID_STR_LEN + 1], int n, const char *tail, aw_rows **out,
		      aw_error *err)
{
	size_t cap = strlen(head) + strlen(tail) + 8 + (size_t)n * 8;
	char *sql = aw_malloc(cap);
	aw_val *v = aw_malloc(sizeof *v * (size_t)(nfixed + n));
	aw_err e;
	if (!sql || !v) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	} else {
		memcpy(v, fixed, sizeof *v * (size_t)nfixed);
		for (int i = 0; i < n; i++)
			v[nfixed + i] = AW_TEXT(ids[i]);
		int o = snprintf(sql, cap, "%s (", head);
		sql_params(sql, cap, &o, nfixed + 1, n);
		snprintf(sql + o, cap - (size_t)o, ")%s", tail);
		e = out ? txn_exec(t, sql, nfixed + n, v, out, err)
			: txn_defer(t, sql, nfixed + n, v, err);
	}
	free(sql);
	free(v);
	return e;
}

/* flag[i] = 1 when ids[i] is a value of r's first column. */
static void mark_listed(const aw_rows *r, char (*ids)[AW_UUID_STR_LEN + 1], int n, int *flag)
{
	for (int i = 0; i < n; i++) {
		flag[i] = 0;
		for (int k = 0; k < r->nrows && !flag[i]; k++)
			flag[i] = strcmp(rows_get(r, k, 0), ids[i]) == 0;
	}
}

static void claimed_sink(const aw_rows *r, void *arg)
{
	*(int *)arg = r && r->nrows == 1 && strcmp(rows_get(r, 0, 0), "claimed") == 0;
}

/* The insert of a handed-off run: claimed, unless its queue has a limit
 * (then queued, as any other: the limit is counted by the claims) or, for
 * the idle-tenant lane, its project has 4 runs or more in flight and waiting
 * (the lane's rule, as in the claim: pg 0022). */
#define BUSY                                                                                     \
	" OR (SELECT count(*) FROM (SELECT 1 FROM runs i WHERE i.project_id = $1 AND i.state IN" \
	" ('claimed', 'running') LIMIT 4) fl) + (SELECT count(*) FROM (SELECT 1 FROM runs i"     \
	" WHERE i.project_id = $1 AND i.queue = $12 AND i.state IN ('queued', 'retry_wait')"     \
	" ORDER BY i.priority DESC, i.run_id LIMIT 4) fq) >= 4"
#define QUEUED(busy)                                                                   \
	"(EXISTS (SELECT 1 FROM run_queues q WHERE q.project_id = $1 AND q.name = $12" \
	" AND q.concurrency IS NOT NULL)" busy ")"
#define INSERT_HANDOFF(expires, busy)                                                                                                                                             \
	"INSERT INTO runs (project_id, run_id, state, mode, workflow, input, priority,"                                                                                           \
	" attempts, max_attempts, timeout_s, trace_id, run_after, created_at, updated_at,"                                                                                        \
	" queue, lease_owner, lease_expires_at) VALUES ($1, $2, CASE WHEN " QUEUED(busy) " THEN 'queued' ELSE 'claimed' END, $3, $4, $5, $6, CASE WHEN " QUEUED(                  \
		busy) " THEN 0 ELSE 1 END, $7, $8, $9, $10, $11, $11, $12, CASE WHEN " QUEUED(busy) " THEN NULL ELSE $13 END, CASE WHEN " QUEUED(busy) " THEN NULL ELSE " expires \
																		       " END) RETURNING state"
#define PG_EXPIRES "CAST($14 AS timestamptz)"

aw_err aw_store_run_insert(aw_txn *t, const aw_run *r, int idle_only, int *claimed, aw_error *err)
{
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(r->run_id), AW_TEXT(r->mode),
		      AW_TEXT(r->workflow), AW_TEXT(r->input), AW_INT(r->priority),
		      AW_INT(r->max_attempts), AW_INT(r->timeout_s), AW_TEXT(r->trace_id),
		      AW_TEXT(r->run_after), AW_TEXT(r->created_at),
		      AW_TEXT(r->queue[0] ? r->queue : "default"),
		      /* $13: the lease owner of a hand-off, else the state */
		      AW_TEXT(r->lease_owner[0] ? r->lease_owner : r->state),
		      AW_TEXT(r->lease_expires_at)};
	if (r->lease_owner[0]) {
		int pg = txn_dialect(t) == AW_DIALECT_PG;
		const char *sql = idle_only ? pg ? INSERT_HANDOFF(PG_EXPIRES, BUSY)
						 : INSERT_HANDOFF("$14", BUSY)
				  : pg ? INSERT_HANDOFF(PG_EXPIRES, "")
					    : INSERT_HANDOFF("$14", "");
		*claimed = 0;
		return txn_defer_rows(t, sql, 14, v, claimed_sink, claimed, err);
	}
	return txn_defer(t,
			 "INSERT INTO runs (project_id, run_id, state, mode, workflow, input,"
			 " priority, attempts, max_attempts, timeout_s, trace_id, run_after,"
			 " created_at, updated_at, queue)"
			 " VALUES ($1, $2, $13, $3, $4, $5, $6, 0, $7, $8, $9, $10, $11, $11, $12)",
			 13, v, err);
}

#define RUN_PARAMS 15
#define RUN_CHUNK 200

aw_err aw_store_run_insert_many(aw_txn *t, const aw_run *const *runs, int n, aw_error *err)
{
	size_t cap = 512 + RUN_CHUNK * (RUN_PARAMS * 8 + 4);
	char *sql = aw_malloc(cap);
	aw_val *v = aw_malloc(sizeof *v * RUN_CHUNK * RUN_PARAMS);
	aw_err e = sql && v ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
	for (int base = 0; base < n && !e; base += RUN_CHUNK) {
		int k = n - base < RUN_CHUNK ? n - base : RUN_CHUNK;
		int o = snprintf(
			sql, cap,
			"INSERT INTO runs (project_id, run_id, state, mode, workflow, input,"
			" priority, attempts, max_attempts, timeout_s, trace_id, run_after,"
			" created_at, updated_at, queue) VALUES ");
		for (int i = 0; i < k; i++) {
			const aw_run *r = runs[base + i];
			aw_val *p = &v[i * RUN_PARAMS];
			p[0] = AW_TEXT(t->ctx.project);
			p[1] = AW_TEXT(r->run_id);
			p[2] = AW_TEXT(r->state);
			p[3] = AW_TEXT(r->mode);
			p[4] = AW_TEXT(r->workflow);
			p[5] = AW_TEXT(r->input);
			p[6] = AW_INT(r->priority);
			p[7] = AW_INT(0);
			p[8] = AW_INT(r->max_attempts);
			p[9] = AW_INT(r->timeout_s);
			p[10] = AW_TEXT(r->trace_id);
			p[11] = AW_TEXT(r->run_after);
			p[12] = AW_TEXT(r->created_at);
			p[13] = AW_TEXT(r->created_at);
			p[14] = AW_TEXT(r->queue[0] ? r->queue : "default");
			o += snprintf(sql + o, cap - (size_t)o, "%s(", i ? ", " : "");
			sql_params(sql, cap, &o, i * RUN_PARAMS + 1, RUN_PARAMS);
			o += snprintf(sql + o, cap - (size_t)o, ")");
		}
		e = txn_defer(t, sql, k * RUN_PARAMS, v, err);
	}
	free(sql);
	free(v);
	return e;
}

aw_err aw_store_queue_get(aw_txn *t, const char *name, int *found, int *count, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(name)};
	aw_err e = txn_exec(t,
			    "SELECT (SELECT count(*) FROM run_queues WHERE project_id = $1"
			    " AND name = $2), (SELECT count(*) FROM run_queues"
			    " WHERE project_id = $1)",
			    2, v, &r, err);
	if (!e) {
		*found = int_cell(r, 0, 0);
		if (count)
			*count = int_cell(r, 0, 1);
	}
	rows_free(r);
	return e;
}

aw_err aw_store_queue_put(aw_txn *t, const char *name, int concurrency, const char *now,
			  const char *by, aw_error *err)
{
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(name),
		      concurrency > 0 ? AW_INT(concurrency) : AW_TEXT(NULL), AW_TEXT(now),
		      AW_TEXT(by)};
	return txn_exec(t,
			"INSERT INTO run_queues (project_id, name, concurrency, updated_at,"
			" updated_by) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (project_id, name)"
			" DO UPDATE SET concurrency = excluded.concurrency,"
			" updated_at = excluded.updated_at, updated_by = excluded.updated_by",
			5, v, NULL, err);
}

aw_err aw_store_queue_list(aw_txn *t, aw_run_queue **out, int *n, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project)};
	aw_err e = txn_exec(
		t,
		"SELECT q.name, q.concurrency, (SELECT count(*) FROM runs r WHERE r.project_id = $1"
		" AND r.queue = q.name AND r.state IN ('queued', 'retry_wait')),"
		" (SELECT count(*) FROM runs r WHERE r.project_id = $1 AND r.queue = q.name"
		" AND r.state IN ('claimed', 'running')), q.updated_at, q.updated_by"
		" FROM (SELECT name, concurrency, updated_at, updated_by FROM run_queues"
		" WHERE project_id = $1 UNION ALL SELECT 'default', NULL, NULL, NULL"
		" WHERE NOT EXISTS (SELECT 1 FROM run_queues WHERE project_id = $1"
		" AND name = 'default')) q ORDER BY q.name",
		1, v, &r, err);
	if (e)
		return e;
	aw_run_queue *q = aw_calloc((size_t)r->nrows + 1, sizeof *q);
	if (!q) {
		rows_free(r);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	for (int i = 0; i < r->nrows; i++) {
		cell_copy(q[i].name, sizeof q[i].name, r, i, 0);
		q[i].concurrency = rows_get(r, i, 1) ? int_cell(r, i, 1) : 0;
		q[i].queued = cell_ll(r, i, 2);
		q[i].running = cell_ll(r, i, 3);
		cell_copy(q[i].updated_at, sizeof q[i].updated_at, r, i, 4);
		cell_copy(q[i].updated_by, sizeof q[i].updated_by, r, i, 5);
	}
	*out = q;
	*n = r->nrows;
	rows_free(r);
	return AW_OK;
}

aw_err aw_store_run_get(aw_txn *t, const char *run_id, aw_run *out, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(run_id)};
	aw_err e =
		txn_exec(t, "SELECT " RUN_COLS " FROM runs WHERE project_id = $1 AND run_id = $2",
			 2, v, &r, err);
	if (e)
		return e;
	memset(out, 0, sizeof *out);
	if (r->nrows == 0)
		e = aw_fail(err, AW_E_RUN_NOT_FOUND, "no such run");
	else if (run_from_row(out, r, 0)) {
		aw_run_free(out);
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	rows_free(r);
	return e;
}

/* text as a LIKE pattern that matches it anywhere (or, prefix, only at the
 * start), lower case, its own %, _ and \\ escaped: malloc'd, NULL when out
 * of memory. */
static char *like_pattern(const char *text, int prefix)
{
	size_t n = strlen(text);
	char *p = aw_malloc(2 * n + 3), *o = p;
	if (!p)
		return NULL;
	if (!prefix)
		*o++ = '%';
	for (size_t i = 0; i < n; i++) {
		char c = text[i];
		if (c == '%' || c == '_' || c == '\\')
			*o++ = '\\';
		*o++ = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
	}
	*o++ = '%';
	*o = 0;
	return p;
}

aw_err aw_store_run_list(aw_txn *t, const aw_run_filter *f, const char *before, int limit,
			 aw_run **out, int *n, aw_error *err)
{
	static const aw_run_filter any = {0};
	if (!f)
		f = &any;
	int pg = txn_dialect(t) == AW_DIALECT_PG;
	aw_val v[9] = {AW_TEXT(t->ctx.project), AW_INT(limit)};
	int np = 2;
	char sql[1536];
	int o = snprintf(sql, sizeof sql, "SELECT " RUN_COLS " FROM runs WHERE project_id = $1");
	/* only the filters asked for, so every parameter has a type on postgres */
	const struct {
		const char *val, *cond;
	} eq[] = {{f->state, " AND state = $%d"},
		  {f->queue, " AND queue = $%d"},
		  {f->created_from, " AND created_at >= $%d"},
		  {f->created_to, " AND created_at < $%d"},
		  {before, " AND run_id < $%d"}};
	for (size_t i = 0; i < sizeof eq / sizeof eq[0]; i++) {
		if (!eq[i].val || !*eq[i].val)
			continue;
		v[np++] = AW_TEXT(eq[i].val);
		o += snprintf(sql + o, sizeof sql - (size_t)o, eq[i].cond, np);
	}
	char *id_like = NULL, *any_like = NULL;
	if (f->text && *f->text) {
		id_like = like_pattern(f->text, 1);
		any_like = like_pattern(f->text, 0);
		if (!id_like || !any_like) {
			free(id_like);
			free(any_like);
			return aw_fail(err, AW_E_NOMEM, "out of memory");
		}
		v[np++] = AW_TEXT(id_like);
		v[np++] = AW_TEXT(any_like);
		/* a step is an object of the workflow array; kind and name are text */
		o += snprintf(
			sql + o, sizeof sql - (size_t)o,
			pg ? " AND (lower(run_id::text) LIKE $%d ESCAPE '\\' OR EXISTS (SELECT 1"
			     " FROM jsonb_array_elements(workflow) s WHERE lower(coalesce("
			     "s->>'kind', '')) LIKE $%d ESCAPE '\\' OR lower(coalesce(s->>'name',"
			     " '')) LIKE $%d ESCAPE '\\'))"
			   : " AND (lower(run_id) LIKE $%d ESCAPE '\\' OR EXISTS (SELECT 1 FROM"
			     " json_each(workflow) s WHERE lower(coalesce(json_extract(s.value,"
			     " '$.kind'), '')) LIKE $%d ESCAPE '\\' OR lower(coalesce(json_extract("
			     "s.value, '$.name'), '')) LIKE $%d ESCAPE '\\'))",
			np - 1, np, np);
	}
	snprintf(sql + o, sizeof sql - (size_t)o, " ORDER BY run_id DESC LIMIT $2");
	aw_rows *r = NULL;
	aw_err e = txn_exec(t, sql, np, v, &r, err);
	free(id_like);
	free(any_like);
	if (e)
		return e;
	aw_run *arr = aw_calloc((size_t)r->nrows + 1, sizeof *arr);
	int bad = !arr;
	for (int i = 0; arr && i < r->nrows; i++)
		bad |= run_from_row(&arr[i], r, i);
	if (bad) {
		aw_runs_free(arr, arr ? r->nrows : 0);
		rows_free(r);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	*out = arr;
	*n = r->nrows;
	rows_free(r);
	return AW_OK;
}

/* Journal entries as a JSON object by run id, each with the columns of
 * run_steps but run_id (pg 0021's run_journal reads them back); result is
 * JSON text already. Returns the buffer's error. */
/* An optional column: "" is null. */
static void add_jstr_or_null(aw_buf *b, const char *v)
{
	if (*v)
		aw_buf_add_jstr(b, v, strlen(v));
	else
		aw_buf_adds(b, "null");
}

/* Journal entries as a JSON object by run id, each with the columns of
 * run_steps but run_id (pg 0021's run_journal reads them back); result is
 * JSON text already. Returns the buffer's error. */
static aw_err last_steps_json(const aw_run_step *s, int n, aw_buf *b)
{
	aw_buf_adds(b, "{");
	for (int i = 0; i < n; i++) {
		aw_buf_addf(b, "%s\"%s\":{\"step_no\":%d,\"kind\":", i ? "," : "", s[i].run_id,
			    s[i].step_no);
		aw_buf_add_jstr(b, s[i].kind, strlen(s[i].kind));
		aw_buf_adds(b, ",\"state\":");
		aw_buf_add_jstr(b, s[i].state, strlen(s[i].state));
		aw_buf_adds(b, ",\"idempotency_key\":");
		aw_buf_add_jstr(b, s[i].idem_key, strlen(s[i].idem_key));
		aw_buf_addf(b, ",\"result\":%s,\"attempt\":%d,\"error_code\":",
			    s[i].result ? s[i].result : "null", s[i].attempt);
		add_jstr_or_null(b, s[i].error_code);
		aw_buf_adds(b, ",\"started_at\":");
		add_jstr_or_null(b, s[i].started_at);
		aw_buf_adds(b, ",\"finished_at\":");
		add_jstr_or_null(b, s[i].finished_at);
		aw_buf_addf(b, ",\"tries\":%d}", s[i].tries);
	}
	aw_buf_adds(b, "}");
	return aw_buf_err(b);
}

/* UPDATE runs SET ... WHERE project_id AND state = from AND run_id IN (ids);
 * ok[i] = 1 for the runs that moved. */
static aw_err cas(aw_txn *t, char (*ids)[AW_UUID_STR_LEN + 1], int n, const char *from,
		  const char *to, const aw_run_change *c, int *ok, aw_error *err)
{
	char sql[640];
	aw_val v[12];
	int np = 0;
	v[np++] = AW_TEXT(t->ctx.project);
	v[np++] = AW_TEXT(from);
	v[np++] = AW_TEXT(to);
	v[np++] = AW_TEXT(c->now);
	size_t cap = sizeof sql;
	int o = snprintf(sql, cap, "UPDATE runs SET state = $3, updated_at = $4");
	if (c->error_code) {
		v[np++] = AW_TEXT(*c->error_code ? c->error_code : NULL);
		o += snprintf(sql + o, cap - (size_t)o, ", error_code = $%d", np);
	}
	if (c->run_after) {
		v[np++] = AW_TEXT(c->run_after);
		o += snprintf(sql + o, cap - (size_t)o, ", run_after = $%d", np);
	}
	if (c->clear_lease)
		o += snprintf(sql + o, cap - (size_t)o,
			      ", lease_owner = NULL, lease_expires_at = NULL");
	if (c->attempts_delta) {
		v[np++] = AW_INT(c->attempts_delta);
		o += snprintf(sql + o, cap - (size_t)o, ", attempts = attempts + $%d", np);
	}
	if (c->started)
		o += snprintf(sql + o, cap - (size_t)o, ", started_at = coalesce(started_at, $4)");
	if (c->finished)
		o += snprintf(sql + o, cap - (size_t)o, ", finished_at = $4");
	aw_buf last = AW_BUF_INIT((size_t)1 << 30);
	if (c->last_steps) { /* the parameter typed jsonb: parsed once, at bind */
		if (last_steps_json(c->last_steps, c->nlast, &last)) {
			aw_buf_free(&last);
			return aw_fail(err, AW_E_NOMEM, "out of memory");
		}
		v[np++] = AW_TEXT(aw_buf_str(&last));
		o += snprintf(sql + o, cap - (size_t)o,
			      txn_dialect(t) == AW_DIALECT_PG
				      ? ", last_step = $%d::jsonb -> CAST(run_id AS text)"
				      : ", last_step = json_extract($%d, '$.\"' || run_id || '\"')",
			      np);
	}
	o += snprintf(sql + o, cap - (size_t)o, " WHERE project_id = $1 AND state = $2");
	if (c->holder) {
		v[np++] = AW_TEXT(c->holder);
		o += snprintf(sql + o, cap - (size_t)o, " AND lease_owner = $%d", np);
	}
	if (c->expired_by) {
		v[np++] = AW_TEXT(c->expired_by);
		o += snprintf(sql + o, cap - (size_t)o, " AND lease_expires_at < $%d", np);
	}
	snprintf(sql + o, cap - (size_t)o, " AND run_id IN");
	aw_err e;
	if (c->locked && txn_dialect(t) == AW_DIALECT_PG) {
		/* sent with what follows; a run that did not move fails the
		 * statement, and with it the transaction (the CASE's text is
		 * cast at run time only: the aggregate is not a constant) */
		char head[sizeof sql + 32], tail[192];
		snprintf(head, sizeof head, "WITH u AS (%s", sql);
		snprintf(tail, sizeof tail,
			 " RETURNING 1) SELECT CAST(CASE WHEN count(*) = %d THEN NULL"
			 " ELSE 'a locked run did not move' END AS integer) FROM u",
			 n);
		e = exec_in(t, head, v, np, ids, n, tail, NULL, err);
		for (int i = 0; !e && i < n; i++)
			ok[i] = 1;
	} else {
		aw_rows *r = NULL;
		e = exec_in(t, sql, v, np, ids, n, " RETURNING run_id", &r, err);
		if (!e)
			mark_listed(r, ids, n, ok);
		rows_free(r);
	}
	aw_buf_free(&last);
	return e;
}

aw_err aw_store_run_cas(aw_txn *t, const char *run_id, const char *from, const char *to,
			const aw_run_change *c, aw_error *err)
{
	char id[1][AW_UUID_STR_LEN + 1];
	if (AW_STR_COPY(id[0], run_id) < 0) /* a cut id could name another run */
		return aw_fail(err, AW_E_REQ_ID, "run id must be a UUID");
	int ok = 0;
	aw_err e = cas(t, id, 1, from, to, c, &ok, err);
	if (!e && !ok)
		e = aw_fail(err, AW_E_RUN_STATE, "the run is no longer %s; nothing changed", from);
	return e;
}

aw_err aw_store_run_cas_many(aw_txn *t, char (*ids)[AW_UUID_STR_LEN + 1], int n, const char *from,
			     const char *to, const aw_run_change *c, int *ok, aw_error *err)
{
	return n > 0 ? cas(t, ids, n, from, to, c, ok, err) : AW_OK;
}

aw_err aw_store_run_lock_held(aw_txn *t, char (*ids)[AW_UUID_STR_LEN + 1], int n,
			      const char *holder, const char *state, int *held, aw_error *err)
{
	if (n <= 0)
		return AW_OK;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(holder), AW_TEXT(state)};
	aw_rows *r = NULL;
	aw_err e = exec_in(t,
			   "SELECT run_id FROM runs WHERE project_id = $1 AND lease_owner = $2"
			   " AND state = $3 AND run_id IN",
			   v, 3, ids, n, txn_dialect(t) == AW_DIALECT_PG ? " FOR UPDATE" : "", &r,
			   err);
	if (e)
		return e;
	mark_listed(r, ids, n, held);
	rows_free(r);
	return AW_OK;
}

aw_err aw_store_run_steps(aw_txn *t, char (*ids)[AW_UUID_STR_LEN + 1], int n, aw_run_step **out,
			  int *nsteps, aw_error *err)
{
	*out = NULL;
	*nsteps = 0;
	if (n <= 0)
		return AW_OK;
	aw_val v[] = {AW_TEXT(t->ctx.project)};
	aw_rows *r = NULL;
	aw_err e = exec_in(
		t, "SELECT " STEP_COLS " FROM run_journal WHERE project_id = $1 AND run_id IN", v,
		1, ids, n, " ORDER BY run_id, step_no", &r, err);
	if (e)
		return e;
	aw_run_step *arr = aw_calloc((size_t)r->nrows + 1, sizeof *arr);
	int bad = !arr;
	for (int i = 0; arr && i < r->nrows; i++) {
		aw_run_step *s = &arr[i];
		cell_copy(s->run_id, sizeof s->run_id, r, i, 0);
		s->step_no = int_cell(r, i, 1);
		cell_copy(s->kind, sizeof s->kind, r, i, 2);
		cell_copy(s->state, sizeof s->state, r, i, 3);
		cell_copy(s->idem_key, sizeof s->idem_key, r, i, 4);
		s->result = dup_cell(r, i, 5);
		bad |= !s->result && rows_get(r, i, 5);
		s->attempt = int_cell(r, i, 6);
		cell_copy(s->error_code, sizeof s->error_code, r, i, 7);
		cell_copy(s->started_at, sizeof s->started_at, r, i, 8);
		cell_copy(s->finished_at, sizeof s->finished_at, r, i, 9);
		s->tries = int_cell(r, i, 10);
	}
	if (bad) {
		aw_run_steps_free(arr, arr ? r->nrows : 0);
		rows_free(r);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	*out = arr;
	*nsteps = r->nrows;
	rows_free(r);
	return AW_OK;
}

#define STEP_PARAMS 12
#define STEP_CHUNK 100

aw_err aw_store_run_steps_put(aw_txn *t, const aw_run_step *steps, int n, aw_error *err)
{
	size_t cap = 512 + STEP_CHUNK * 100;
	char *sql = aw_malloc(cap);
	aw_val *v = aw_malloc(sizeof *v * STEP_CHUNK * STEP_PARAMS);
	aw_err e = AW_OK;
	if (!sql || !v) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
		goto out;
	}
	for (int base = 0; base < n && !e; base += STEP_CHUNK) {
		int k = n - base < STEP_CHUNK ? n - base : STEP_CHUNK;
		int o = snprintf(sql, cap,
				 "INSERT INTO run_steps (project_id, " STEP_COLS ") VALUES ");
		for (int i = 0; i < k; i++) {
			const aw_run_step *s = &steps[base + i];
			aw_val *p = &v[i * STEP_PARAMS];
			p[0] = AW_TEXT(t->ctx.project);
			p[1] = AW_TEXT(s->run_id);
			p[2] = AW_INT(s->step_no);
			p[3] = AW_TEXT(s->kind);
			p[4] = AW_TEXT(s->state);
			p[5] = AW_TEXT(s->idem_key);
			p[6] = AW_TEXT(s->result);
			p[7] = AW_INT(s->attempt);
			p[8] = AW_TEXT(s->error_code[0] ? s->error_code : NULL);
			p[9] = AW_TEXT(s->started_at[0] ? s->started_at : NULL);
			p[10] = AW_TEXT(s->finished_at[0] ? s->finished_at : NULL);
			p[11] = AW_INT(s->tries);
			o += snprintf(sql + o, cap - (size_t)o, "%s(", i ? ", " : "");
			sql_params(sql, cap, &o, i * STEP_PARAMS + 1, STEP_PARAMS);
			o += snprintf(sql + o, cap - (size_t)o, ")");
		}
		snprintf(sql + o, cap - (size_t)o,
			 " ON CONFLICT (run_id, step_no) DO UPDATE SET kind = excluded.kind,"
			 " state = excluded.state, result = excluded.result,"
			 " attempt = excluded.attempt, error_code = excluded.error_code,"
			 " started_at = excluded.started_at, finished_at = excluded.finished_at,"
			 " tries = excluded.tries");
		e = txn_defer(t, sql, k * STEP_PARAMS, v, err);
	}
out:
	free(sql);
	free(v);
	return e;
}

/* ---- the workers' platform path ---- */

static aw_ctx worker_ctx(const char *who)
{
	aw_ctx sys;
	aw_ctx_system(&sys, NULL);
	char p[sizeof sys.principal];
	if (AW_STR_COPY(p, who) == 0) /* a worker id (AW_WORKER_ID_MAX) fits; else "system" */
		AW_COPY_ARRAY(sys.principal, p);
	return sys;
}

static aw_err claims_from_rows(const aw_rows *r, int prev_col, aw_run_claim **out, int *n,
			       aw_error *err)
{
	/* columns: project_id, run_id, queue, prev_state, mode, workflow, input,
	 * attempts, max_attempts, timeout_s, trace_id, claimed_at, held, resumed
	 * (prev_state may be absent; held and resumed too) */
	aw_run_claim *arr = aw_calloc((size_t)r->nrows + 1, sizeof *arr);
	int bad = !arr;
	for (int i = 0; arr && i < r->nrows; i++) {
		aw_run_claim *c = &arr[i];
		int k = 0;
		cell_copy(c->project_id, sizeof c->project_id, r, i, k++);
		cell_copy(c->run_id, sizeof c->run_id, r, i, k++);
		cell_copy(c->queue, sizeof c->queue, r, i, k++);
		if (prev_col)
			cell_copy(c->prev_state, sizeof c->prev_state, r, i, k++);
		cell_copy(c->mode, sizeof c->mode, r, i, k++);
		c->workflow = dup_cell(r, i, k++);
		c->input = dup_cell(r, i, k);
		bad |= !c->workflow || (!c->input && rows_get(r, i, k));
		k++;
		c->attempts = int_cell(r, i, k++);
		c->max_attempts = int_cell(r, i, k++);
		c->timeout_s = int_cell(r, i, k++);
		cell_copy(c->trace_id, sizeof c->trace_id, r, i, k++);
		cell_copy(c->claimed_at, sizeof c->claimed_at, r, i, k++);
		if (k < r->ncols) {
			c->held = bool_cell(r, i, k++);
			c->resumed = bool_cell(r, i, k++);
		}
	}
	if (bad) {
		aw_run_claims_free(arr, arr ? r->nrows : 0);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	*out = arr;
	*n = r->nrows;
	return AW_OK;
}

/* The claim's transaction ends here unless it holds runs and the caller
 * takes it (*open); on error it is rolled back and nothing is returned. */
static aw_err claim_end(aw_txn *t, aw_err e, aw_txn **open, aw_run_claim **out, int *n,
			aw_error *err)
{
	int held = 0;
	for (int i = 0; !e && i < *n; i++)
		held |= (*out)[i].held;
	if (!e && held && open)
		*open = t;
	else if (!e)
		e = aw_store_commit(t, err);
	else
		aw_store_rollback(t);
	if (e) {
		aw_run_claims_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return e;
}

static aw_err sqlite_claim(aw_store *s, const char *worker, int lease_ms, int limit, int idle_only,
			   const char *hold, aw_txn **open, aw_run_claim **out, int *n,
			   aw_error *err)
{
	aw_ctx sys = worker_ctx(worker);
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, &sys, AW_TXN_WRITE, &t, err);
	if (e)
		return e;
	char now[AW_TS_LEN + 1], exp[AW_TS_LEN + 1];
	int64_t ms = aw_clock_wall_ms();
	aw_clock_format(ms, now);
	aw_clock_format(ms + lease_ms, exp);
	aw_rows *fair = NULL, *r = NULL, *h = NULL;
	int np = 0, nh = 0;
	char(*ids)[AW_UUID_STR_LEN + 1] = NULL, (*hids)[AW_UUID_STR_LEN + 1] = NULL;
	char(*prev)[16] = NULL;
	int *resumed = NULL;
	/* round robin over projects (each one's first runnable run, then each
	 * one's second, ...), within a project over its queues, priority and
	 * age within a queue: a tenant's backlog or priorities cannot hold
	 * another's runs back; a queue with a limit gives its free places only
	 * (counted under the write lock this claim holds). A run never started
	 * whose steps are all of a kind in $4 is held (see pg 0022). */
	aw_val p[] = {AW_TEXT(now), AW_INT(limit), AW_INT(idle_only), AW_TEXT(open ? hold : NULL)};
	e = txn_exec(
		t,
		"WITH q AS (SELECT p.project_id, 'default' AS name, d.concurrency FROM projects p"
		" LEFT JOIN run_queues d ON d.project_id = p.project_id AND d.name = 'default'"
		" UNION ALL SELECT project_id, name, concurrency FROM run_queues"
		" WHERE name <> 'default'),"
		" f AS (SELECT q.project_id, q.name, CASE WHEN q.concurrency IS NULL THEN $2"
		" ELSE max(0, min($2, q.concurrency - (SELECT count(*) FROM runs i"
		" WHERE i.project_id = q.project_id AND i.queue = q.name"
		" AND i.state IN ('claimed', 'running')))) END AS n FROM q WHERE $3 = 0 OR"
		" (SELECT count(*) FROM (SELECT 1 FROM runs i WHERE i.project_id = q.project_id"
		" AND i.state IN ('claimed', 'running') LIMIT 4)) + (SELECT count(*) FROM"
		" (SELECT 1 FROM runs i WHERE i.project_id = q.project_id AND i.queue = q.name"
		" AND i.state IN ('queued', 'retry_wait') ORDER BY i.priority DESC, i.run_id"
		" LIMIT 4)) < 4),"
		" c AS (SELECT r.run_id, r.state, r.priority, r.project_id, f.n,"
		" r.state = 'queued' AND r.started_at IS NULL AND $4 IS NOT NULL"
		" AND json_array_length(r.workflow) > 0 AND NOT EXISTS (SELECT 1"
		" FROM json_each(r.workflow) s WHERE coalesce(json_extract(s.value, '$.kind')"
		" IN (SELECT value FROM json_each($4)), 0) = 0) AS held,"
		" r.started_at IS NOT NULL AS resumed,"
		" row_number() OVER (PARTITION BY r.project_id, r.queue ORDER BY r.priority DESC,"
		" r.run_id) AS qn FROM f JOIN runs r ON r.run_id IN (SELECT x.run_id FROM runs x"
		" WHERE x.project_id = f.project_id AND x.queue = f.name"
		" AND x.state IN ('queued', 'retry_wait') AND x.run_after <= $1"
		" ORDER BY x.priority DESC, x.run_id LIMIT $2) WHERE f.n > 0)"
		" SELECT run_id, state, held, resumed FROM (SELECT c.run_id, c.state, c.priority,"
		" c.held, c.resumed, row_number() OVER (PARTITION BY c.project_id"
		" ORDER BY c.qn, c.priority DESC, c.run_id) AS pn FROM c WHERE c.qn <= c.n)"
		" ORDER BY pn, priority DESC, run_id LIMIT $2",
		4, p, &fair, err);
	if (e)
		goto out;
	ids = aw_malloc(sizeof *ids * (size_t)(fair->nrows + 1));
	hids = aw_malloc(sizeof *hids * (size_t)(fair->nrows + 1));
	prev = aw_malloc(sizeof *prev * (size_t)(fair->nrows + 1));
	resumed = aw_calloc((size_t)fair->nrows + 1, sizeof *resumed);
	if (!ids || !hids || !prev || !resumed) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < fair->nrows; i++) {
		if (bool_cell(fair, i, 2)) {
			cell_copy(hids[nh++], sizeof hids[0], fair, i, 0);
			continue;
		}
		cell_copy(ids[np], sizeof ids[np], fair, i, 0);
		cell_copy(prev[np], sizeof prev[np], fair, i, 1);
		resumed[np++] = bool_cell(fair, i, 3);
	}
	aw_val v[] = {AW_TEXT(worker), AW_TEXT(exp), AW_TEXT(now)};
	const char *cols = " project_id, run_id, queue, mode, workflow, input, attempts,"
			   " max_attempts, timeout_s, trace_id, ";
	char tail[200], head[200];
	snprintf(tail, sizeof tail, " RETURNING%supdated_at", cols);
	if (np)
		e = exec_in(
			t,
			"UPDATE runs SET state = 'claimed', lease_owner = $1, lease_expires_at = $2,"
			" attempts = attempts + 1, updated_at = $3 WHERE run_id IN",
			v, 3, ids, np, tail, &r, err);
	snprintf(head, sizeof head, "SELECT%s$1, 1, 0 FROM runs WHERE run_id IN", cols);
	if (!e && nh)
		e = exec_in(t, head, v + 2, 1, hids, nh, "", &h, err);
	aw_run_claim *hc = NULL;
	int nhc = 0;
	if (!e && np)
		e = claims_from_rows(r, 0, out, n, err);
	if (!e && nh)
		e = claims_from_rows(h, 0, &hc, &nhc, err);
	for (int i = 0; !e && i < *n; i++)
		for (int k = 0; k < np; k++)
			if (strcmp(ids[k], (*out)[i].run_id) == 0) {
				AW_COPY_ARRAY((*out)[i].prev_state, prev[k]);
				(*out)[i].resumed = resumed[k];
			}
	if (!e && nhc) { /* the held ones after the claimed */
		aw_run_claim *all = aw_realloc(*out, sizeof *all * (size_t)(*n + nhc + 1));
		if (!all) {
			e = aw_fail(err, AW_E_NOMEM, "out of memory");
		} else {
			for (int i = 0; i < nhc; i++)
				snprintf(hc[i].prev_state, sizeof hc[i].prev_state, "queued");
			memcpy(all + *n, hc, sizeof *hc * (size_t)nhc);
			*out = all;
			*n += nhc;
			free(hc);
			hc = NULL;
			nhc = 0;
		}
	}
	aw_run_claims_free(hc, nhc);
out:
	free(ids);
	free(hids);
	free(prev);
	free(resumed);
	rows_free(fair);
	rows_free(r);
	rows_free(h);
	return claim_end(t, e, open, out, n, err);
}

aw_err aw_store_run_claim(aw_store *s, const char *worker, int lease_ms, int limit, int idle_only,
			  const char *hold, aw_txn **open, aw_run_claim **out, int *n,
			  aw_error *err)
{
	*out = NULL;
	*n = 0;
	if (open)
		*open = NULL;
	if (s->drv->dialect != AW_DIALECT_PG)
		return sqlite_claim(s, worker, lease_ms, limit, idle_only, hold, open, out, n, err);
	aw_ctx sys = worker_ctx(worker);
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(worker), AW_INT(lease_ms), AW_INT(limit),
		      AW_TEXT(idle_only ? "true" : "false"), AW_TEXT(open && hold ? hold : "[]")};
	const char *sql = "SELECT project_id, run_id, queue_name, prev_state, mode, workflow,"
			  " input, attempts, max_attempts, timeout_s, trace_id, claimed_at, held,"
			  " resumed"
			  " FROM platform_run_claim($1, $2, $3, $4,"
			  " ARRAY(SELECT jsonb_array_elements_text($5::jsonb)))";
	aw_err e;
	if (!open || !hold) { /* nothing held: one statement, no transaction to end */
		e = store_exec1(s, &sys, sql, 5, p, &r, err);
		if (!e)
			e = claims_from_rows(r, 1, out, n, err);
		rows_free(r);
		return e;
	}
	aw_txn *t = NULL;
	if ((e = aw_store_begin(s, &sys, AW_TXN_WRITE, &t, err)))
		return e;
	/* the held runs' moves from `queued` follow in this transaction, by
	 * run id. Before the table's first ANALYZE (a backlog just submitted)
	 * the planner reads its indexes as near empty and chose the ready index
	 * (a custom plan's `state = 'queued'` proves its predicate) or a bitmap
	 * AND with the project's index - either reads the project's whole
	 * backlog for each round's 64 ids (a burn-down of a fresh backlog ran
	 * at half speed). A generic plan cannot prove the predicate; without
	 * bitmaps what is left are lookups by id. */
	e = txn_defer(t,
		      "SELECT set_config('plan_cache_mode', 'force_generic_plan', true),"
		      " set_config('enable_bitmapscan', 'off', true)",
		      0, NULL, err);
	if (!e)
		e = txn_exec(t, sql, 5, p, &r, err);
	if (!e)
		e = claims_from_rows(r, 1, out, n, err);
	rows_free(r);
	return claim_end(t, e, open, out, n, err);
}

/* A JSON array of ids for the PostgreSQL functions. */
static char *ids_json(char (*ids)[AW_UUID_STR_LEN + 1], int n)
{
	aw_buf b = AW_BUF_INIT((size_t)n * (AW_UUID_STR_LEN + 3) + 2);
	aw_buf_adds(&b, "[");
	for (int i = 0; i < n; i++)
		aw_buf_addf(&b, "%s\"%s\"", i ? "," : "", ids[i]);
	aw_buf_adds(&b, "]");
	if (aw_buf_err(&b)) {
		aw_buf_free(&b);
		return NULL;
	}
	return aw_buf_take(&b);
}

aw_err aw_store_run_heartbeat(aw_store *s, const char *worker, int lease_ms,
			      char (*ids)[AW_UUID_STR_LEN + 1], int n, int *lost, aw_error *err)
{
	if (n <= 0)
		return AW_OK;
	aw_ctx sys = worker_ctx(worker);
	aw_rows *r = NULL;
	aw_err e;
	int pg = s->drv->dialect == AW_DIALECT_PG;
	if (pg) {
		char *j = ids_json(ids, n);
		if (!j)
			return aw_fail(err, AW_E_NOMEM, "out of memory");
		aw_val p[] = {AW_TEXT(worker), AW_INT(lease_ms), AW_TEXT(j)};
		e = store_exec1(s, &sys, "SELECT run_id FROM platform_run_heartbeat($1, $2, $3)", 3,
				p, &r, err);
		free(j);
	} else {
		char exp[AW_TS_LEN + 1];
		aw_clock_format(aw_clock_wall_ms() + lease_ms, exp);
		aw_val v[] = {AW_TEXT(worker), AW_TEXT(exp)};
		aw_txn *t = NULL;
		e = aw_store_begin(s, &sys, AW_TXN_WRITE, &t, err);
		if (!e) {
			e = exec_in(t,
				    "UPDATE runs SET lease_expires_at = $2 WHERE lease_owner = $1"
				    " AND state IN ('claimed', 'running') AND run_id IN",
				    v, 2, ids, n, " RETURNING run_id", &r, err);
			if (!e)
				e = aw_store_commit(t, err);
			else
				aw_store_rollback(t);
		}
	}
	if (e) {
		rows_free(r);
		return e;
	}
	/* PostgreSQL returns the lost runs, SQLite the renewed ones */
	mark_listed(r, ids, n, lost);
	for (int i = 0; !pg && i < n; i++)
		lost[i] = !lost[i];
	rows_free(r);
	return AW_OK;
}

/* Runs across projects for the reaper (platform path): PostgreSQL through a
 * definer function of awooop_platform taking ($1 limit), SQLite directly
 * ($1 limit, $2 now). */
static aw_err reaper_refs(aw_store *s, const char *pg_sql, const char *sqlite_sql, int limit,
			  aw_run_ref **out, int *n, aw_error *err)
{
	aw_ctx sys = worker_ctx("reaper");
	aw_rows *r = NULL;
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	aw_val p[] = {AW_INT(limit), AW_TEXT(now)};
	int pg = s->drv->dialect == AW_DIALECT_PG;
	aw_err e = store_exec1(s, &sys, pg ? pg_sql : sqlite_sql, pg ? 1 : 2, p, &r, err);
	if (e)
		return e;
	static const aw_text_field f[] = {AW_TEXT_FIELD(aw_run_ref, project_id),
					  AW_TEXT_FIELD(aw_run_ref, run_id),
					  AW_TEXT_FIELD(aw_run_ref, state)};
	return rows_to_array(r, sizeof **out, f, 3, (void **)out, n, err);
}

aw_err aw_store_run_expired(aw_store *s, int limit, aw_run_ref **out, int *n, aw_error *err)
{
	return reaper_refs(s, "SELECT project_id, run_id, state FROM platform_run_expired($1)",
			   "SELECT project_id, run_id, state FROM runs WHERE state IN"
			   " ('claimed', 'running') AND lease_expires_at < $2"
			   " ORDER BY lease_expires_at LIMIT $1",
			   limit, out, n, err);
}

aw_err aw_store_run_approval_expired(aw_store *s, int limit, aw_run_ref **out, int *n,
				     aw_error *err)
{
	return reaper_refs(
		s, "SELECT project_id, run_id, state FROM platform_run_approval_expired($1)",
		"SELECT r.project_id, r.run_id, r.state FROM runs r JOIN run_steps s"
		" ON s.project_id = r.project_id AND s.run_id = r.run_id"
		" AND s.state = 'waiting' WHERE r.state = 'waiting_approval'"
		" AND json_extract(s.result, '$.expires_at') < $2 LIMIT $1",
		limit, out, n, err);
}

aw_err aw_store_run_queue_oldest(aw_store *s, const char *now, aw_run_queue_oldest **out, int *n,
				 aw_error *err)
{
	*out = NULL;
	*n = 0;
	aw_ctx sys = worker_ctx("queue-age");
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(now), AW_INT(AW_RUN_QUEUE_DEPTH_MAX)};
	/* per queue one descent of runs_due_queue (migrations 0028 / 0023) and
	 * its due entries, at most $2 of them (pg 0031) */
	aw_err e = store_exec1(
		s, &sys,
		s->drv->dialect == AW_DIALECT_PG
			? "SELECT project_id, queue, due_at, depth FROM platform_run_queue_oldest($1, $2)"
			: "SELECT project_id, name, due_at, (SELECT count(*) FROM (SELECT 1 FROM runs r"
			  " WHERE r.project_id = q2.project_id AND r.queue = q2.name"
			  " AND r.state IN ('queued', 'retry_wait') AND r.run_after <= $1 LIMIT $2))"
			  " FROM (SELECT q.project_id, q.name,"
			  " (SELECT min(r.run_after) FROM runs r WHERE r.project_id = q.project_id"
			  " AND r.queue = q.name AND r.state IN ('queued', 'retry_wait')) AS due_at"
			  " FROM (SELECT project_id, 'default' AS name FROM projects UNION ALL"
			  " SELECT project_id, name FROM run_queues WHERE name <> 'default') q) q2"
			  " WHERE due_at <= $1",
		2, p, &r, err);
	if (e)
		return e;
	aw_run_queue_oldest *a = aw_calloc((size_t)r->nrows + 1, sizeof *a);
	if (!a) {
		rows_free(r);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	for (int k = 0; k < r->nrows; k++) {
		cell_copy(a[k].project_id, sizeof a[k].project_id, r, k, 0);
		cell_copy(a[k].queue, sizeof a[k].queue, r, k, 1);
		cell_copy(a[k].due_at, sizeof a[k].due_at, r, k, 2);
		a[k].depth = cell_ll(r, k, 3);
	}
	*n = r->nrows;
	*out = a;
	rows_free(r);
	return AW_OK;
}

aw_err aw_store_run_queues_of(aw_txn *t, char (*ids)[AW_UUID_STR_LEN + 1], int n,
			      char (*queues)[AW_QUEUE_MAX + 1], aw_error *err)
{
	for (int i = 0; i < n; i++)
		queues[i][0] = '\0';
	if (n <= 0)
		return AW_OK;
	aw_val v[] = {AW_TEXT(t->ctx.project)};
	aw_rows *r = NULL;
	aw_err e = exec_in(t, "SELECT run_id, queue FROM runs WHERE project_id = $1 AND run_id IN",
			   v, 1, ids, n, "", &r, err);
	if (e)
		return e;
	for (int k = 0; k < r->nrows; k++)
		for (int i = 0; i < n; i++)
			if (!queues[i][0] && strcmp(rows_get(r, k, 0), ids[i]) == 0)
				cell_copy(queues[i], sizeof queues[i], r, k, 1);
	rows_free(r);
	return AW_OK;
}

aw_err aw_store_runs_prune(aw_store *s, const char *before, int limit, int64_t *n, aw_error *err)
{
	aw_ctx sys = worker_ctx("reaper");
	*n = 0;
	if (s->drv->dialect == AW_DIALECT_PG) {
		aw_rows *r = NULL;
		aw_val p[] = {AW_TEXT(before), AW_INT(limit)};
		aw_err e =
			store_exec1(s, &sys, "SELECT platform_runs_prune($1, $2)", 2, p, &r, err);
		if (!e)
			*n = cell_ll(r, 0, 0);
		rows_free(r);
		return e;
	}
	/* SQLite: one writer, no RLS; the same deletes in one transaction */
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, &sys, AW_TXN_WRITE, &t, err);
	aw_val p[] = {AW_TEXT(before), AW_INT(limit)};
	static const char pick[] =
		" (SELECT run_id FROM runs WHERE finished_at IS NOT NULL AND finished_at < $1"
		" AND state IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'suggested')"
		" ORDER BY finished_at, run_id LIMIT $2)";
	static const char *const tables[] = {"run_steps", "run_approvals", "run_calls",
					     "conversation_runs", "runs"};
	for (size_t i = 0; !e && i < sizeof tables / sizeof tables[0]; i++) {
		char sql[512];
		snprintf(sql, sizeof sql, "DELETE FROM %s WHERE run_id IN%s", tables[i], pick);
		aw_rows *r = NULL;
		e = txn_exec(t, sql, 2, p, &r, err);
		if (!e && i == 4)
			*n = r->affected;
		rows_free(r);
	}
	if (!e)
		return aw_store_commit(t, err);
	if (t)
		aw_store_rollback(t);
	return e;
}

/* ---- idempotency keys ---- */

aw_err aw_store_idem_get(aw_txn *t, const char *scope, const char *key, const char *now, int *found,
			 char *hash, char *resource, size_t cap, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(scope), AW_TEXT(key)};
	aw_err e = txn_exec(t,
			    "SELECT request_hash, resource_id, expires_at FROM idempotency_keys"
			    " WHERE project_id = $1 AND scope = $2 AND idem_key = $3",
			    3, v, &r, err);
	if (e)
		return e;
	*found = 0;
	if (r->nrows && strcmp(rows_get(r, 0, 2), now) > 0) {
		*found = 1;
		cell_copy(hash, 65, r, 0, 0);
		cell_copy(resource, cap, r, 0, 1);
	} else if (r->nrows) {
		e = txn_exec(t,
			     "DELETE FROM idempotency_keys WHERE project_id = $1 AND scope = $2"
			     " AND idem_key = $3",
			     3, v, NULL, err);
	}
	rows_free(r);
	return e;
}

#define IDEM_CHUNK 500

aw_err aw_store_idem_present(aw_txn *t, const char *scope, const char *const *keys, int n,
			     int *present, aw_error *err)
{
	size_t cap = 512 + IDEM_CHUNK * 12;
	char *sql = aw_malloc(cap);
	aw_val *v = aw_malloc(sizeof *v * (IDEM_CHUNK + 2));
	aw_err e = sql && v ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
	for (int i = 0; i < n; i++)
		present[i] = 0;
	for (int base = 0; base < n && !e; base += IDEM_CHUNK) {
		int k = n - base < IDEM_CHUNK ? n - base : IDEM_CHUNK;
		/* a probe of the key's index for each (an IN list over the table
		 * was planned as a scan while the table had no statistics) */
		int o = snprintf(sql, cap, "WITH k(v) AS (VALUES ");
		for (int i = 0; i < k; i++)
			o += snprintf(sql + o, cap - (size_t)o, "%s($%d)", i ? ", " : "", 3 + i);
		snprintf(sql + o, cap - (size_t)o,
			 ") SELECT v FROM k WHERE EXISTS (SELECT 1 FROM idempotency_keys i"
			 " WHERE i.project_id = $1 AND i.scope = $2 AND i.idem_key = k.v)");
		v[0] = AW_TEXT(t->ctx.project);
		v[1] = AW_TEXT(scope);
		for (int i = 0; i < k; i++)
			v[2 + i] = AW_TEXT(keys[base + i]);
		aw_rows *r = NULL;
		if ((e = txn_exec(t, sql, k + 2, v, &r, err)))
			break;
		for (int row = 0; row < r->nrows; row++)
			for (int i = 0; i < k; i++)
				if (strcmp(rows_get(r, row, 0), keys[base + i]) == 0)
					present[base + i] = 1;
		rows_free(r);
	}
	free(sql);
	free(v);
	return e;
}

#define IDEM_PARAMS 5

aw_err aw_store_idem_put_many(aw_txn *t, const char *scope, const char *const *keys,
			      const char *const *hashes, const char *const *resources, int n,
			      const char *now, const char *expires, aw_error *err)
{
	size_t cap = 256 + IDEM_CHUNK * (IDEM_PARAMS * 8 + 24);
	char *sql = aw_malloc(cap);
	aw_val *v = aw_malloc(sizeof *v * (IDEM_CHUNK * IDEM_PARAMS + 2));
	aw_err e = sql && v ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
	for (int base = 0; base < n && !e; base += IDEM_CHUNK) {
		int k = n - base < IDEM_CHUNK ? n - base : IDEM_CHUNK;
		/* $1 project, $2 scope, then key, hash, resource, created, expires */
		int o = snprintf(sql, cap,
				 "INSERT INTO idempotency_keys (project_id, scope, idem_key,"
				 " request_hash, resource_id, created_at, expires_at) VALUES ");
		v[0] = AW_TEXT(t->ctx.project);
		v[1] = AW_TEXT(scope);
		for (int i = 0; i < k; i++) {
			aw_val *p = &v[2 + i * IDEM_PARAMS];
			p[0] = AW_TEXT(keys[base + i]);
			p[1] = AW_TEXT(hashes[base + i]);
			p[2] = AW_TEXT(resources[base + i]);
			p[3] = AW_TEXT(now);
			p[4] = AW_TEXT(expires);
			o += snprintf(sql + o, cap - (size_t)o, "%s($1, $2, ", i ? ", " : "");
			sql_params(sql, cap, &o, 3 + i * IDEM_PARAMS, IDEM_PARAMS);
			o += snprintf(sql + o, cap - (size_t)o, ")");
		}
		e = txn_defer(t, sql, 2 + k * IDEM_PARAMS, v, err);
	}
	free(sql);
	free(v);
	return e;
}

aw_err aw_store_idem_put(aw_txn *t, const char *scope, const char *key, const char *hash,
			 const char *resource, const char *now, const char *expires, aw_error *err)
{
	return aw_store_idem_put_many(t, scope, &key, &hash, &resource, 1, now, expires, err);
}
