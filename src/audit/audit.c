/*
 * audit.c - appending to and verifying the per-project audit hash chain (see
 * audit.h). Hash input: the previous hash and every field of the record, each
 * length-prefixed ("<len>:<bytes>|") so no two records can serialise alike.
 */
#include "awooop/alloc.h"
#include "awooop/audit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/buf.h"
#include "awooop/crypto.h"
#include "awooop/json.h"
#include "awooop/metrics.h"
#include "awooop/redact.h"
#include "awooop/str.h"
#include "awooop/uuid.h"

static size_t field(char *dst, const char *s)
{
	size_t n = strlen(s);
	int k = snprintf(dst, 24, "%zu:", n); /* the caller sized dst for it */
	memcpy(dst + k, s, n);
	dst[k + (int)n] = '|';
	return (size_t)k + n + 1;
}

void aw_audit_hash(const aw_audit_row *a, char *out)
{
	char seq[24];
	snprintf(seq, sizeof seq, "%lld", (long long)a->seq);
	const char *f[] = {a->prev_hash, a->project_id,
			   seq,		 a->event_id,
			   a->ts,	 a->actor,
			   a->action,	 a->target ? a->target : "",
			   a->trace_id,	 a->payload ? a->payload : ""};
	size_t total = 0;
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		total += strlen(f[i]) + 24;
	char *buf = aw_malloc(total);
	if (!buf) {
		out[0] = '\0'; /* matches no stored hash: verification fails safe */
		return;
	}
	size_t o = 0;
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		o += field(buf + o, f[i]);
	aw_sha256_hex(buf, o, out);
	free(buf);
}

/* Fills a (except seq and hashes) around payload, already redacted text
 * (taken, freed with a): ids, time, the target (redacted unless an id). */
static aw_err fill_row(aw_audit_row *a, const aw_ctx *ctx, const char *action, const char *target,
		       const char *trace_id, char *payload, aw_error *err)
{
	a->payload = payload;
	/* a target that is an id awooop made (run, revision, key: UUIDs) is kept
	 * as it is - it is the record's link to its subject; anything else passes
	 * the redaction engine like the payload */
	target = target ? target : "";
	a->target =
		aw_uuid_valid(target) ? aw_strdup(target) : aw_redact_str_for(ctx->project, target);
	if (!a->payload || !a->target)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	aw_uuid7_str(a->event_id);
	AW_COPY_ARRAY(a->project_id, ctx->project);
	aw_clock_now(a->ts);
	AW_COPY_ARRAY(a->actor, ctx->principal);
	if (AW_STR_COPY(a->action, action) < 0)
		return aw_fail(err, AW_E_INTERNAL, "audit action longer than %zu bytes",
			       sizeof a->action - 1);
	if (AW_STR_COPY(a->trace_id, trace_id ? trace_id : ctx->trace.trace_id) < 0)
		return aw_fail(err, AW_E_INTERNAL, "audit trace id longer than %zu bytes",
			       sizeof a->trace_id - 1);
	return AW_OK;
}

/* Fills a (except seq and hashes) from it: its payload redacted and
 * serialised. */
static aw_err prepare(aw_audit_row *a, const aw_ctx *ctx, const aw_audit_item *it, int spent,
		      aw_error *err)
{
	json_t *doc = !it->payload ? json_object()
		      : spent	   ? json_incref((json_t *)it->payload)
				   : json_deep_copy(it->payload);
	if (!doc)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	aw_err e = aw_redact_json_for(ctx->project, doc, NULL);
	char *payload = e ? NULL : aw_json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(doc);
	if (e)
		return aw_fail(err, e, "audit payload could not be redacted");
	aw_err f = fill_row(a, ctx, it->action, it->target, it->trace_id, payload, err);
	if (!f && it->actor && /* the batch's records are not all ctx's principal's */
	    AW_STR_COPY(a->actor, it->actor) < 0)
		return aw_fail(err, AW_E_INTERNAL, "audit actor longer than %zu bytes",
			       sizeof a->actor - 1);
	return f;
}

/* Appends the n rows filled (frees them): hashed by the database (in the
 * function that appends) or here, under the head's lock. */
static aw_err append_rows(aw_txn *t, aw_audit_row *rows, int n, aw_error *err)
{
	aw_err e = AW_OK;
	if (aw_store_audit_in_db(t)) {
		e = aw_store_audit_append(t, rows, n, err);
		aw_audit_rows_free(rows, n);
		return e;
	}
	int64_t seq = 0;
	char prev[65];
	e = aw_store_audit_head(t, &seq, prev, err); /* the write txn holds the lock */
	for (int i = 0; i < n && !e; i++) {
		rows[i].seq = seq + 1 + i;
		memcpy(rows[i].prev_hash, i ? rows[i - 1].hash : prev, 65);
		aw_audit_hash(&rows[i], rows[i].hash);
	}
	if (!e)
		e = aw_store_audit_insert_many(t, rows, n, err);
	aw_audit_rows_free(rows, n);
	return e;
}

static aw_err record_many(aw_txn *t, const aw_ctx *ctx, const aw_audit_item *items, int n,
			  int spent, aw_error *err)
{
	if (n <= 0)
		return AW_OK;
	aw_audit_row *rows = aw_calloc((size_t)n, sizeof *rows);
	if (!rows)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	aw_err e = AW_OK;
	for (int i = 0; i < n && !e; i++)
		e = prepare(&rows[i], ctx, &items[i], spent, err);
	if (e) {
		aw_audit_rows_free(rows, n);
		return e;
	}
	return append_rows(t, rows, n, err);
}

aw_err aw_audit_record_many(aw_txn *t, const aw_ctx *ctx, const aw_audit_item *items, int n,
			    aw_error *err)
{
	return record_many(t, ctx, items, n, 0, err);
}

aw_err aw_audit_record_many_spent(aw_txn *t, const aw_ctx *ctx, const aw_audit_item *items, int n,
				  aw_error *err)
{
	return record_many(t, ctx, items, n, 1, err);
}

/* A grouped record's payload at most (a round's record is ~23 KB, a bulk
 * submission's of 1,000 runs ~180 KB; PostgreSQL's text ends at 1 GB). */
#define AUDIT_GROUP_MAX (256u << 20)

aw_err aw_audit_record_group(aw_txn *t, const aw_ctx *ctx, const char *action,
			     const aw_audit_item *items, int n, aw_error *err)
{
	if (n <= 1)
		return aw_audit_record_many(t, ctx, items, n, err);
	/* {"items":[...]}, each item its payload's members, then "target" and
	 * "trace_id" - written as text: built as a JSON tree and dumped, a
	 * round's record (64 runs, ~23 KB) took a fifth of a worker's CPU
	 * (written so, the workers take ~15 % less a run). A round's
	 * runs mostly carry equal payloads: each distinct one is redacted and
	 * serialised once (the last MEMO distinct ones are compared), and the
	 * items equal to it share its text. */
	enum { MEMO = 4 };
	const json_t *seen[MEMO] = {0};
	char *text[MEMO] = {0};
	int nseen = 0;
	aw_buf b = AW_BUF_INIT(AUDIT_GROUP_MAX);
	aw_buf_adds(&b, "{\"items\":[");
	aw_err e = AW_OK;
	for (int i = 0; i < n && !e; i++) {
		/* the index keeps targets as they are: only ids awooop made */
		if (!items[i].target || !aw_uuid_valid(items[i].target)) {
			e = aw_fail(err, AW_E_INTERNAL, "a grouped audit record's targets are ids");
			break;
		}
		const char *members = NULL; /* the payload's text without its closing brace */
		for (int k = 0; k < MEMO && k < nseen && !members; k++)
			if (items[i].payload ? json_equal(seen[k], items[i].payload) : !seen[k])
				members = text[k];
		if (!members) {
			int slot = nseen++ % MEMO;
			free(text[slot]);
			seen[slot] = items[i].payload;
			json_t *r =
				items[i].payload ? json_deep_copy(items[i].payload) : json_object();
			if (!r || !json_is_object(r)) {
				json_decref(r);
				e = aw_fail(err, AW_E_INTERNAL,
					    "a grouped audit item's payload is not an object");
				break;
			}
			json_object_del(r, "target"); /* the item's own win */
			json_object_del(r, "trace_id");
			if ((e = aw_redact_json_for(ctx->project, r, NULL))) {
				json_decref(r);
				aw_fail(err, e, "audit payload could not be redacted");
				break;
			}
			members = text[slot] = json_dumps(r, JSON_COMPACT);
			json_decref(r);
			if (!members) {
				e = aw_fail(err, AW_E_NOMEM, "out of memory");
				break;
			}
		}
		size_t len = strlen(members) - 1; /* "{...}" */
		aw_buf_add(&b, i ? ",{" : "{", i ? 2 : 1);
		aw_buf_add(&b, members + 1, len - 1);
		aw_buf_adds(&b, len > 1 ? ",\"target\":" : "\"target\":");
		aw_buf_add_jstr(&b, items[i].target, strlen(items[i].target));
		const char *trace = items[i].trace_id ? items[i].trace_id : ctx->trace.trace_id;
		aw_buf_adds(&b, ",\"trace_id\":");
		aw_buf_add_jstr(&b, trace, strlen(trace));
		aw_buf_adds(&b, "}");
	}
	aw_buf_adds(&b, "]}");
	for (int k = 0; k < MEMO; k++)
		free(text[k]);
	if (!e && aw_buf_err(&b))
		e = aw_fail(err, aw_buf_err(&b),
			    aw_buf_err(&b) == AW_E_LIMIT
				    ? "a grouped audit record would be larger than 256 MiB"
				    : "out of memory");
	char *payload = e ? NULL : aw_buf_take(&b);
	aw_buf_free(&b);
	if (e || !payload)
		return e ? e : aw_fail(err, AW_E_NOMEM, "out of memory");
	aw_audit_row *row = aw_calloc(1, sizeof *row);
	if (!row) {
		free(payload);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	if ((e = fill_row(row, ctx, action, NULL, NULL, payload, err))) {
		aw_audit_rows_free(row, 1);
		return e;
	}
	char event_id[AW_UUID_STR_LEN + 1];
	memcpy(event_id, row->event_id, sizeof event_id);
	if ((e = append_rows(t, row, 1, err)))
		return e;
	const char **targets = aw_malloc(sizeof *targets * (size_t)n);
	if (!targets)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	for (int i = 0; i < n; i++)
		targets[i] = items[i].target;
	e = aw_store_audit_targets_put(t, event_id, targets, n, err);
	free(targets);
	return e;
}

aw_err aw_audit_record(aw_txn *t, const aw_ctx *ctx, const char *action, const char *target,
		       const json_t *payload, aw_error *err)
{
	aw_audit_item it = {.action = action, .target = target, .payload = payload};
	return aw_audit_record_many(t, ctx, &it, 1, err);
}

aw_err aw_audit_verify(aw_store *s, const aw_ctx *ctx, aw_audit_report *rep, aw_error *err)
{
	memset(rep, 0, sizeof *rep);
	char prev[65] = "0000000000000000000000000000000000000000000000000000000000000000";
	int64_t expect = 1, after = 0, head_seq = 0;
	char head_hash[65];
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err);
	if (e)
		return e;
	if ((e = aw_store_audit_head(t, &head_seq, head_hash, err)))
		goto out;
	for (;;) {
		aw_audit_row *rows = NULL;
		int n = 0;
		if ((e = aw_store_audit_list(t, after, "", "", 500, &rows, &n, err)))
			goto out;
		for (int i = 0; i < n && !rep->break_seq; i++) {
			aw_audit_row *a = &rows[i];
			char h[65];
			aw_audit_hash(a, h);
			if (a->seq != expect)
				snprintf(rep->reason, sizeof rep->reason,
					 "record %lld is missing (next present is %lld): deleted",
					 (long long)expect, (long long)a->seq);
			else if (strcmp(a->prev_hash, prev) != 0)
				snprintf(rep->reason, sizeof rep->reason,
					 "record %lld does not follow record %lld: reordered or"
					 " replaced",
					 (long long)a->seq, (long long)a->seq - 1);
			else if (strcmp(h, a->hash) != 0)
				snprintf(rep->reason, sizeof rep->reason,
					 "record %lld does not match its hash: altered",
					 (long long)a->seq);
			if (rep->reason[0]) {
				rep->break_seq = expect;
				break;
			}
			memcpy(prev, a->hash, sizeof prev);
			rep->records++;
			expect++;
			after = a->seq;
		}
		aw_audit_rows_free(rows, n);
		if (rep->break_seq || n < 500)
			break;
	}
	if (!rep->break_seq && (head_seq != expect - 1 || (head_seq && strcmp(head_hash, prev)))) {
		rep->break_seq = expect;
		snprintf(rep->reason, sizeof rep->reason,
			 "the chain head is at record %lld but the trail ends at %lld:"
			 " records deleted from the end",
			 (long long)head_seq, (long long)expect - 1);
	}
	rep->ok = rep->break_seq == 0;
out:
	aw_store_rollback(t);
	if (!e)
		aw_metrics_audit_verify(ctx->project, rep->ok);
	return e;
}

json_t *aw_audit_row_json(const aw_audit_row *a)
{
	json_error_t je;
	json_t *payload = json_loads(a->payload ? a->payload : "{}", JSON_DECODE_ANY, &je);
	json_t *o = json_pack("{s:s, s:s, s:I, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "event_id",
			      a->event_id, "project", a->project_id, "seq", (json_int_t)a->seq,
			      "ts", a->ts, "actor", a->actor, "action", a->action, "target",
			      a->target ? a->target : "", "trace_id", a->trace_id, "prev_hash",
			      a->prev_hash, "hash", a->hash);
	if (o)
		json_object_set_new(o, "payload", payload ? payload : json_null());
	else
		json_decref(payload);
	return o;
}
