/*
 * redaction.c - a project's custom redaction patterns (redaction.h): the
 * platform's writes (validated and compiled before the transaction, audited
 * in it, installed in this process's registry after the commit) and the
 * poller that installs other processes' writes once per version.
 *
 * The registry only moves forward (aw_redact_custom_install drops a version
 * not newer than the installed one), so a poller that read an older list
 * while a write committed cannot roll the newer one back.
 */
#include "awooop/alloc.h"
#include "awooop/redaction.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/audit.h"
#include "awooop/clock.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/redact.h"
#include "awooop/store/tenancy.h"
#include "awooop/str.h"

void aw_redaction_list_clear(aw_redaction_list *l)
{
	if (!l)
		return;
	json_decref(l->patterns);
	memset(l, 0, sizeof *l);
}

/* out from a stored row (patterns parsed; [] when there is none). */
static aw_err list_of(const aw_redaction_row *r, aw_redaction_list *out, aw_error *err)
{
	memset(out, 0, sizeof *out);
	out->version = r->version;
	memcpy(out->updated_at, r->updated_at, sizeof out->updated_at);
	memcpy(out->updated_by, r->updated_by, sizeof out->updated_by);
	out->patterns = r->patterns ? json_loads(r->patterns, 0, NULL) : json_array();
	if (!json_is_array(out->patterns)) {
		aw_redaction_list_clear(out);
		return aw_fail(err, AW_E_INTERNAL, "a stored pattern list is not a JSON array");
	}
	return AW_OK;
}

aw_err aw_redaction_get(aw_store *s, const aw_ctx *ctx, aw_redaction_list *out, aw_error *err)
{
	memset(out, 0, sizeof *out);
	aw_txn *t = NULL;
	aw_project p;
	aw_redaction_row row = {0};
	aw_err e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err);
	if (e)
		return e;
	if (!(e = aw_store_project_get(t, &p, err)))
		e = aw_store_redaction_get(t, &row, err);
	aw_store_rollback(t);
	if (!e)
		e = list_of(&row, out, err);
	free(row.patterns);
	return e;
}

aw_err aw_redaction_set(aw_store *s, const aw_ctx *ctx, const json_t *patterns,
			aw_redaction_list *out, aw_error *err)
{
	if (out)
		memset(out, 0, sizeof *out);
	if (ctx->scope != AW_SCOPE_PLATFORM_ADMIN)
		return aw_fail(err, AW_E_AUTH_SCOPE,
			       "custom redaction patterns are set by the platform"
			       " (a platform-admin key)");
	/* validated and compiled before anything is written: a list that does
	   not compile here changes nothing */
	aw_redact_custom *set = NULL;
	aw_err e = aw_redact_custom_compile(patterns, &set, err);
	if (e)
		return e;
	char *text = json_dumps(patterns, JSON_COMPACT);
	json_t *payload =
		json_pack("{s:O, s:i}", "patterns", patterns, "count", aw_redact_custom_count(set));
	if (!text || !payload) {
		free(text);
		json_decref(payload);
		aw_redact_custom_free(set);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	int64_t version = 0;
	aw_project p;
	aw_txn *t = NULL;
	if (!(e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err))) {
		if (!(e = aw_store_project_get(t, &p, err)) &&
		    !(e = aw_store_redaction_put(t, text, now, ctx->principal, &version, err))) {
			json_object_set_new(payload, "version", json_integer(version));
			e = aw_audit_record(t, ctx, "redaction.patterns.set", ctx->project, payload,
					    err);
		}
		if (e)
			aw_store_rollback(t);
		else
			e = aw_store_commit(t, err);
	}
	json_decref(payload);
	if (e) {
		free(text);
		aw_redact_custom_free(set);
		return e;
	}
	char v[24], count[16];
	snprintf(v, sizeof v, "%lld", (long long)version);
	snprintf(count, sizeof count, "%d", aw_redact_custom_count(set));
	aw_redact_custom_install(ctx->project, version, set); /* takes set */
	aw_log(AW_LOG_INFO, ctx, "custom redaction patterns set", "principal", ctx->principal,
	       "version", v, "patterns", count, NULL);
	if (out) {
		aw_redaction_row row = {.version = version, .patterns = text};
		memcpy(row.updated_at, now, sizeof row.updated_at);
		AW_COPY_ARRAY(row.updated_by, ctx->principal);
		e = list_of(&row, out, err);
	}
	free(text);
	return e;
}

/* Reads and installs project's list (its version as read: maybe newer than
 * the poller saw). A list that does not compile in this process (a newer
 * binary wrote it, another PCRE2) is installed as none, with an error log:
 * the other processes keep theirs, and the next version is tried again. */
static aw_err reload(aw_store *s, const char *project, int *changed, aw_error *err)
{
	aw_ctx ctx;
	aw_ctx_system(&ctx, project);
	snprintf(ctx.principal, sizeof ctx.principal, "redaction_sync");
	aw_txn *t = NULL;
	aw_redaction_row row = {0};
	aw_err e = aw_store_begin(s, &ctx, AW_TXN_READ, &t, err);
	if (e)
		return e;
	e = aw_store_redaction_get(t, &row, err);
	aw_store_rollback(t);
	if (e || row.version == 0) {
		free(row.patterns);
		return e;
	}
	json_t *list = json_loads(row.patterns, 0, NULL);
	free(row.patterns);
	aw_redact_custom *set = NULL;
	aw_error why = {0};
	if (aw_redact_custom_compile(list, &set, &why) != AW_OK) {
		char v[24];
		snprintf(v, sizeof v, "%lld", (long long)row.version);
		aw_log(AW_LOG_ERROR, &ctx,
		       "custom redaction patterns do not compile in this process: none applied",
		       "version", v, "detail", why.msg, "pointer", why.where, NULL);
		set = NULL;
	}
	json_decref(list);
	if (aw_redact_custom_install(project, row.version, set) && changed)
		++*changed;
	return AW_OK;
}

aw_err aw_redaction_sync(aw_store *s, int *changed, aw_error *err)
{
	if (changed)
		*changed = 0;
	aw_ctx sys;
	aw_ctx_system(&sys, NULL);
	snprintf(sys.principal, sizeof sys.principal, "redaction_sync");
	aw_redaction_version *vs = NULL;
	int n = 0;
	aw_err e = aw_store_platform_redaction_versions(s, &sys, &vs, &n, err);
	for (int i = 0; !e && i < n; i++)
		if (vs[i].version > aw_redact_custom_version(vs[i].project_id))
			e = reload(s, vs[i].project_id, changed, err);
	free(vs);
	return e;
}

/* ----------------------------------------------------------------- poller */

struct aw_redaction_poller {
	aw_store *s;
	int interval_ms;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
};

static void *poller_main(void *arg)
{
	aw_redaction_poller *p = arg;
	pthread_setname_np(pthread_self(), "aw-redaction");
	int failing = 0;
	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		struct timespec ts = aw_clock_after(CLOCK_MONOTONIC, p->interval_ms);
		pthread_cond_timedwait(&p->cv, &p->mu, &ts);
		if (p->stop)
			break;
		pthread_mutex_unlock(&p->mu);
		aw_error err = {0};
		if (aw_redaction_sync(p->s, NULL, &err) == AW_OK) {
			failing = 0;
			aw_metrics_loop_tick("redaction_sync");
		} else if (!failing++) { /* once a failing spell: the store's own logs say more */
			aw_log(AW_LOG_WARN, NULL, "custom redaction patterns could not be synced",
			       "code", aw_err_code(err.err), "detail", err.msg, NULL);
		}
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

aw_err aw_redaction_poller_start(aw_store *s, int interval_ms, aw_redaction_poller **out,
				 aw_error *err)
{
	*out = NULL;
	aw_err e = aw_redaction_sync(s, NULL, err);
	if (e)
		return e;
	aw_metrics_loop_tick("redaction_sync");
	aw_redaction_poller *p = aw_calloc(1, sizeof *p);
	if (!p)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	p->s = s;
	p->interval_ms = interval_ms > 0 ? interval_ms : 2000;
	pthread_mutex_init(&p->mu, NULL);
	aw_clock_cond_init(&p->cv);
	if (pthread_create(&p->thread, NULL, poller_main, p) != 0) {
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		free(p);
		return aw_fail(err, AW_E_INTERNAL, "cannot start the redaction pattern poller");
	}
	*out = p;
	return AW_OK;
}

void aw_redaction_poller_stop(aw_redaction_poller *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
