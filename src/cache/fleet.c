/*
 * fleet.c - the fleet reporter and the convergence read (see fleet.h).
 *
 * The policy cache calls on_change under its own lock: the listener only
 * records the change and wakes the reporter thread, which writes with no
 * lock held (lock order: policy cache, then the fleet's).
 *
 * At every heartbeat the reporter also probes its own convergence: what the
 * process serves against the store's active pointers of those projects (one
 * statement), published as awooop_policy_convergence_lag_seconds (the alert
 * AwooopPolicyNotConverged). The probe only reads: it measures the bus,
 * the relay and the fallback checker, it does not stand in for them.
 */
#include "awooop/alloc.h"
#include "awooop/fleet.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/clock.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/store/contract.h"
#include "awooop/store/fleet.h"
#include "awooop/str.h"
#include "awooop/uuid.h"

#define PRUNE_EVERY_MS 60000
#define GONE_AFTER_MS (3600 * 1000LL)	     /* rows of silent processes deleted */
#define LEARNED_KEEP_MS (7 * 86400 * 1000LL) /* learned history kept */

#define HIST 16 /* revisions learned between two writes, kept in order */

typedef struct item {
	struct item *next;
	char project[AW_PROJECT_MAX + 1];
	aw_fleet_item it;	  /* what the process serves now */
	aw_fleet_item hist[HIST]; /* learned since the last write, oldest first */
	int nhist, dirty;
	/* the probe: since when (wall ms) it has seen it.revision_id differ
	 * from a store with no active revision for it (a revocation has no
	 * activation time); 0 when not */
	int64_t gone_since_ms;
} item;

struct aw_fleet {
	aw_fleet_opts o;
	aw_fleet_self me;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	item *items;
	int dirty, stop;
};

static void on_change(void *ud, const char *project, const char *family, const char *cid,
		      const char *rev, const char *source)
{
	aw_fleet *f = ud;
	char now[AW_TS_LEN + 1]; /* the moment the cache announced it, before any wait */
	aw_clock_now(now);
	aw_metrics_policy_change(source);
	pthread_mutex_lock(&f->mu);
	item *i = f->items;
	while (i && (strcmp(i->project, project) || strcmp(i->it.family, family) ||
		     strcmp(i->it.contract_id, cid)))
		i = i->next;
	if (!i && (i = aw_calloc(1, sizeof *i))) {
		if (AW_STR_COPY(i->project, project) < 0 || AW_STR_COPY(i->it.family, family) < 0 ||
		    AW_STR_COPY(i->it.contract_id, cid) < 0) { /* the cache's names fit */
			free(i);
			i = NULL;
		} else {
			i->next = f->items;
			f->items = i;
		}
	}
	/* rev: a revision id ("" when revoked); one that does not fit is not
	 * reported rather than reported cut */
	if (i && (strcmp(i->it.revision_id, rev) || !i->it.learned_at[0]) &&
	    AW_STR_COPY(i->it.revision_id, rev) == 0) {
		memcpy(i->it.learned_at, now, sizeof now);
		if (i->nhist == HIST) /* a burst beyond HIST: the oldest go unrecorded */
			memmove(i->hist, i->hist + 1, sizeof i->hist[0] * (HIST - 1));
		i->hist[i->nhist < HIST ? i->nhist++ : HIST - 1] = i->it;
		i->dirty = f->dirty = 1;
		pthread_cond_signal(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
}

static void fleet_ctx(aw_ctx *ctx, const char *project)
{
	aw_ctx_system(ctx, project);
	snprintf(ctx->principal, sizeof ctx->principal, "fleet");
}

/* Writes the items of one project (all of them, or only the changed ones). */
static void report_project(aw_fleet *f, const char *project, const aw_fleet_item *its, int n,
			   int prune)
{
	aw_ctx ctx;
	fleet_ctx(&ctx, project);
	char now[AW_TS_LEN + 1], gone[AW_TS_LEN + 1], keep[AW_TS_LEN + 1];
	int64_t ms = aw_clock_wall_ms();
	aw_clock_format(ms, now);
	aw_clock_format(ms - GONE_AFTER_MS, gone);
	aw_clock_format(ms - LEARNED_KEEP_MS, keep);
	aw_txn *t = NULL;
	aw_error err = {0};
	aw_err e = aw_store_begin(f->o.store, &ctx, AW_TXN_WRITE, &t, &err);
	if (!e)
		e = aw_store_fleet_report(t, &f->me, its, n, now, &err);
	if (!e && prune)
		e = aw_store_fleet_prune(t, gone, keep, &err);
	if (!e)
		e = aw_store_commit(t, &err);
	else if (t)
		aw_store_rollback(t);
	aw_metrics_fleet_report(!e);
	if (e) /* the next heartbeat writes everything again */
		aw_log(AW_LOG_WARN, &ctx, "fleet report failed", "detail", err.msg, NULL);
}

/* Copies the items to write (under mu), grouped by project: every revision
 * learned since the last write in order (so a burst of activations between
 * two writes loses none), the current one last; a heartbeat writes the
 * current one of every item. */
static int snapshot(aw_fleet *f, int all, char (**projects)[AW_PROJECT_MAX + 1],
		    aw_fleet_item **its)
{
	int n = 0;
	for (item *i = f->items; i; i = i->next)
		if (all || i->dirty)
			n += i->nhist ? i->nhist : 1;
	*projects = aw_calloc((size_t)n + 1, sizeof **projects);
	*its = aw_calloc((size_t)n + 1, sizeof **its);
	if (!*projects || !*its) {
		free(*projects);
		free(*its);
		return 0;
	}
	int k = 0;
	for (item *i = f->items; i; i = i->next)
		if (all || i->dirty) {
			for (int h = 0; h < (i->nhist ? i->nhist : 1); h++) {
				memcpy((*projects)[k], i->project, sizeof i->project);
				(*its)[k++] = i->nhist ? i->hist[h] : i->it;
			}
			i->nhist = i->dirty = 0;
		}
	f->dirty = 0;
	/* group by project: the items of one project in one transaction */
	for (int a = 1; a < k; a++)
		for (int b = a; b > 0 && strcmp((*projects)[b - 1], (*projects)[b]) > 0; b--) {
			char tp[AW_PROJECT_MAX + 1];
			memcpy(tp, (*projects)[b], sizeof tp);
			memcpy((*projects)[b], (*projects)[b - 1], sizeof tp);
			memcpy((*projects)[b - 1], tp, sizeof tp);
			aw_fleet_item ti = (*its)[b];
			(*its)[b] = (*its)[b - 1];
			(*its)[b - 1] = ti;
		}
	return k;
}

static void *reporter_main(void *arg)
{
	aw_fleet *f = arg;
	pthread_setname_np(pthread_self(), "aw-fleet");
	int64_t next_beat = aw_clock_mono_ns(), next_prune = next_beat;
	pthread_mutex_lock(&f->mu);
	while (!f->stop) {
		int64_t now = aw_clock_mono_ns();
		int beat = now >= next_beat;
		if (!beat && !f->dirty) {
			struct timespec ts =
				aw_clock_after(CLOCK_MONOTONIC, (next_beat - now) / 1000000 + 1);
			pthread_cond_timedwait(&f->cv, &f->mu, &ts);
			continue;
		}
		char(*projects)[AW_PROJECT_MAX + 1] = NULL;
		aw_fleet_item *its = NULL;
		int n = snapshot(f, beat, &projects, &its);
		pthread_mutex_unlock(&f->mu);
		int prune = beat && now >= next_prune;
		for (int a = 0, b; a < n; a = b) {
			for (b = a + 1; b < n && !strcmp(projects[a], projects[b]);)
				b++;
			report_project(f, projects[a], its + a, b - a, prune);
		}
		free(projects);
		free(its);
		if (beat)
			next_beat = now + (int64_t)f->o.report_ms * 1000000LL;
		if (prune)
			next_prune = now + PRUNE_EVERY_MS * 1000000LL;
		if (beat) {
			aw_error perr = {0};
			if (aw_fleet_probe(f, NULL, &perr))
				aw_log(AW_LOG_WARN, NULL, "fleet convergence probe failed",
				       "detail", perr.msg, NULL);
		}
		aw_metrics_loop_tick("fleet_reporter");
		pthread_mutex_lock(&f->mu);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

aw_err aw_fleet_start(const aw_fleet_opts *o, aw_fleet **out, aw_error *err)
{
	aw_fleet *f = aw_calloc(1, sizeof *f);
	if (!f)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	f->o = *o;
	if (f->o.report_ms <= 0)
		f->o.report_ms = 5000;
	aw_uuid7_str(f->me.process_id);
	if (AW_STR_COPY(f->me.role, o->role ? o->role : "process") < 0) {
		free(f);
		return aw_fail(err, AW_E_CONFIG, "a fleet role is at most %zu bytes",
			       sizeof f->me.role - 1);
	}
	AW_COPY_ARRAY(f->me.version, AWOOOP_VERSION);
	aw_clock_now(f->me.started_at);
	f->me.report_ms = f->o.report_ms;
	pthread_mutex_init(&f->mu, NULL);
	aw_clock_cond_init(&f->cv);
	if (pthread_create(&f->thread, NULL, reporter_main, f) != 0) {
		pthread_cond_destroy(&f->cv);
		pthread_mutex_destroy(&f->mu);
		free(f);
		return aw_fail(err, AW_E_INTERNAL, "cannot start the fleet reporter");
	}
	if (aw_policy_on_change(o->policy, on_change, f)) {
		aw_fleet_stop(f);
		return aw_fail(err, AW_E_INTERNAL, "the policy cache has no listener slot left");
	}
	*out = f;
	return AW_OK;
}

void aw_fleet_stop(aw_fleet *f)
{
	if (!f)
		return;
	aw_policy_off(f->o.policy, on_change, f);
	pthread_mutex_lock(&f->mu);
	f->stop = 1;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
	pthread_join(f->thread, NULL);
	/* forget: one transaction per project this process reported */
	while (f->items) {
		item *i = f->items;
		aw_ctx ctx;
		fleet_ctx(&ctx, i->project);
		aw_txn *t = NULL;
		aw_error err = {0};
		if (!aw_store_begin(f->o.store, &ctx, AW_TXN_WRITE, &t, &err)) {
			if (aw_store_fleet_forget(t, f->me.process_id, &err) ||
			    aw_store_commit(t, &err))
				aw_store_rollback(t);
		}
		for (item **pp = &f->items; *pp;) { /* drop this project's items */
			if (!strcmp((*pp)->project, ctx.project)) {
				item *d = *pp;
				*pp = d->next;
				free(d);
			} else {
				pp = &(*pp)->next;
			}
		}
	}
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

const char *aw_fleet_process_id(const aw_fleet *f)
{
	return f->me.process_id;
}

/* ------------------------------------------------------------ the probe */

/* What the process served when the probe began. */
typedef struct {
	char project[AW_PROJECT_MAX + 1];
	aw_fleet_item it;
	double lag_s;
} served;

static int64_t ts_ms(const char *s);

/* The store's active revision of s (rows of its project), or NULL. */
static const aw_fleet_active *active_of(const aw_fleet_active *rows, int n, const served *s)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(rows[i].project_id, s->project) &&
		    !strcmp(rows[i].family, s->it.family) &&
		    !strcmp(rows[i].contract_id, s->it.contract_id))
			return &rows[i];
	return NULL;
}

/* Copies what the process serves (under mu) and the JSON array of its
 * projects; 0 items: *sv NULL. */
static aw_err served_now(aw_fleet *f, served **sv, int *n, char **projects, aw_error *err)
{
	*sv = NULL;
	*n = 0;
	*projects = NULL;
	json_t *ps = json_array();
	pthread_mutex_lock(&f->mu);
	int k = 0;
	for (item *i = f->items; i; i = i->next)
		k++;
	served *v = k ? aw_calloc((size_t)k, sizeof *v) : NULL;
	int m = 0;
	for (item *i = f->items; v && ps && i; i = i->next) {
		memcpy(v[m].project, i->project, sizeof i->project);
		v[m++].it = i->it;
		size_t j, np = json_array_size(ps);
		for (j = 0; j < np; j++)
			if (!strcmp(json_string_value(json_array_get(ps, j)), i->project))
				break;
		if (j == np)
			json_array_append_new(ps, json_string(i->project));
	}
	pthread_mutex_unlock(&f->mu);
	char *txt = ps ? json_dumps(ps, JSON_COMPACT) : NULL;
	json_decref(ps);
	if ((k && !v) || !txt) {
		free(v);
		free(txt);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	*sv = v;
	*n = m;
	*projects = txt;
	return AW_OK;
}

aw_err aw_fleet_probe(aw_fleet *f, double *worst_s, aw_error *err)
{
	if (worst_s)
		*worst_s = 0;
	served *sv = NULL;
	char *projects = NULL;
	aw_fleet_active *rows = NULL;
	int n = 0, nr = 0;
	/* what the process serves is read first, the store after: a revision
	 * the process learns meanwhile is one the store had already, never a
	 * newer one compared with an older pointer */
	aw_err e = served_now(f, &sv, &n, &projects, err);
	if (!e && n)
		e = aw_store_fleet_active(f->o.store, projects, &rows, &nr, err);
	free(projects);
	if (e) {
		free(sv);
		return e;
	}
	int64_t now = aw_clock_wall_ms();
	pthread_mutex_lock(&f->mu);
	for (int k = 0; k < n; k++) {
		const aw_fleet_active *a = active_of(rows, nr, &sv[k]);
		const char *want = a ? a->revision_id : "";
		item *i = f->items;
		while (i && (strcmp(i->project, sv[k].project) ||
			     strcmp(i->it.family, sv[k].it.family) ||
			     strcmp(i->it.contract_id, sv[k].it.contract_id)))
			i = i->next;
		if (!strcmp(want, sv[k].it.revision_id)) {
			if (i)
				i->gone_since_ms = 0;
			continue;
		}
		/* behind: since the activation the process has not learned, or
		 * since the probe first saw a revocation it has not learned */
		int64_t since = a ? ts_ms(a->activated_at) : 0;
		if (!a && i) {
			if (!i->gone_since_ms)
				i->gone_since_ms = now;
			since = i->gone_since_ms;
		}
		if (since && since < now)
			sv[k].lag_s = (double)(now - since) / 1000.0;
	}
	pthread_mutex_unlock(&f->mu);
	/* per (project, family): the worst of its contracts */
	const char **pj = aw_calloc((size_t)n + 1, sizeof *pj),
		   **fm = aw_calloc((size_t)n + 1, sizeof *fm);
	double *lag = aw_calloc((size_t)n + 1, sizeof *lag);
	int m = 0;
	for (int k = 0; pj && fm && lag && k < n; k++) {
		int j = 0;
		while (j < m && (strcmp(pj[j], sv[k].project) || strcmp(fm[j], sv[k].it.family)))
			j++;
		if (j == m) {
			pj[m] = sv[k].project;
			fm[m] = sv[k].it.family;
			lag[m++] = 0;
		}
		if (sv[k].lag_s > lag[j])
			lag[j] = sv[k].lag_s;
		if (worst_s && sv[k].lag_s > *worst_s)
			*worst_s = sv[k].lag_s;
	}
	if (pj && fm && lag)
		aw_metrics_policy_lag(pj, fm, lag, m, now + 3LL * f->o.report_ms);
	else
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	free(pj);
	free(fm);
	free(lag);
	free(rows);
	free(sv);
	return e;
}

/* ------------------------------------------------------------ convergence */

static int64_t ts_ms(const char *s)
{
	int64_t v = 0;
	return aw_clock_parse(s, &v) ? 0 : v;
}

static json_t *build(const aw_activation_row *acts, int na, const aw_fleet_row *rows, int nr,
		     const aw_fleet_learned *ls, int nl, int64_t now)
{
	json_t *procs = json_array(), *out_acts = json_array();
	int live = 0, stale = 0;
	char *is_live = aw_calloc((size_t)nr + 1, 1);
	for (int i = 0; i < nr; i++) {
		int64_t seen = ts_ms(rows[i].reported_at);
		if (now - seen > 3LL * rows[i].p.report_ms) {
			stale++;
			continue;
		}
		if (is_live)
			is_live[i] = 1;
		live++;
		json_array_append_new(
			procs, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s*,s:s}", "process_id",
					 rows[i].p.process_id, "role", rows[i].p.role, "version",
					 rows[i].p.version, "started_at", rows[i].p.started_at,
					 "last_seen", rows[i].reported_at, "revision_id",
					 rows[i].revision_id[0] ? rows[i].revision_id : NULL,
					 "learned_at", rows[i].learned_at));
	}
	for (int a = 0; a < na; a++) { /* newest first */
		int64_t commit = ts_ms(acts[a].activated_at);
		json_t *per = json_array();
		int learned = 0, serving = 0;
		int64_t worst = 0;
		for (int i = 0; i < nr; i++) {
			if (!is_live || !is_live[i])
				continue;
			/* what it serves now: after a revoke or a newer activation,
			 * learned stays what it was, serving says what is true */
			serving += !strcmp(rows[i].revision_id, acts[a].revision_id);
			const aw_fleet_learned *l = NULL;
			for (int k = 0; k < nl && !l; k++)
				if (!strcmp(ls[k].process_id, rows[i].p.process_id) &&
				    !strcmp(ls[k].revision_id, acts[a].revision_id))
					l = &ls[k];
			if (!l)
				continue;
			int64_t took = ts_ms(l->learned_at) - commit;
			learned++;
			if (took > worst)
				worst = took;
			json_array_append_new(per, json_pack("{s:s,s:s,s:I,s:b}", "process_id",
							     l->process_id, "learned_at",
							     l->learned_at, "took_ms",
							     (json_int_t)took, "started_after",
							     ts_ms(rows[i].p.started_at) > commit));
		}
		json_array_append_new(
			out_acts,
			json_pack("{s:s,s:s,s:s,s:o,s:i,s:i,s:b,s:o,s:o}", "revision_id",
				  acts[a].revision_id, "activated_at", acts[a].activated_at,
				  "activated_by", acts[a].activated_by, "previous_revision_id",
				  acts[a].previous_revision_id[0]
					  ? json_string(acts[a].previous_revision_id)
					  : json_null(),
				  "learned", learned, "of", live, "converged",
				  live > 0 && learned == live, "slowest_ms",
				  learned ? json_integer(worst) : json_null(), "processes", per));
		json_object_set_new(json_array_get(out_acts, json_array_size(out_acts) - 1),
				    "serving", json_integer(serving));
	}
	free(is_live);
	return json_pack("{s:i,s:i,s:o,s:o}", "live", live, "stale", stale, "processes", procs,
			 "activations", out_acts);
}

aw_err aw_fleet_convergence(aw_store *s, const aw_ctx *ctx, const char *family,
			    const char *contract_id, int limit, json_t **out, aw_error *err)
{
	aw_txn *t = NULL;
	aw_activation_row *acts = NULL;
	aw_fleet_row *rows = NULL;
	aw_fleet_learned *ls = NULL;
	int na = 0, nr = 0, nl = 0;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err);
	if (!e)
		e = aw_store_activations_recent(t, family, contract_id, limit, &acts, &na, err);
	if (!e)
		e = aw_store_fleet_serving(t, family, contract_id, &rows, &nr, err);
	if (!e) { /* learned rows from a minute before the oldest listed commit */
		char since[AW_TS_LEN + 1] = "1970-01-01T00:00:00.000Z";
		if (na)
			aw_clock_format(ts_ms(acts[na - 1].activated_at) - 60000, since);
		e = aw_store_fleet_learned(t, family, contract_id, since, &ls, &nl, err);
	}
	if (t)
		aw_store_rollback(t);
	if (!e) {
		json_t *doc = build(acts, na, rows, nr, ls, nl, aw_clock_wall_ms());
		if (!doc)
			e = aw_fail(err, AW_E_NOMEM, "out of memory");
		else {
			json_object_set_new(doc, "family", json_string(family));
			json_object_set_new(doc, "contract_id", json_string(contract_id));
			*out = doc;
		}
	}
	free(acts);
	free(rows);
	free(ls);
	return e;
}
