/*
 * policy.c - the worker revision cache and guard (see policy.h).
 *
 * State, under one mutex:
 *   entries  - (project, family, contract) -> loaded revision + what we last
 *              announced as active ("known");
 *   projects - per project a snapshot of all active pointers and the time it
 *              was read (the bounded guard's clock) and fallback schedules.
 * Store reads happen with the mutex released; "loading"/"refreshing" flags
 * make them single-flight and a condition variable wakes the waiters.
 */
#include "awooop/alloc.h"
#include "awooop/policy.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "awooop/crypto.h"
#include "awooop/keys.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/str.h"

#define MAX_LISTENERS 8

typedef struct entry {
	struct entry *next;
	char project[AW_PROJECT_MAX + 1], family[32], cid[AW_PROJECT_MAX + 1];
	json_t *body;
	char rev[AW_UUID_STR_LEN + 1], hash[65];
	int64_t cached_at_ms;
	int valid, loading, announced;
	char known[AW_UUID_STR_LEN + 1]; /* last announced active revision */
} entry;

typedef struct pstate {
	struct pstate *next;
	char project[AW_PROJECT_MAX + 1];
	int64_t refreshed_ns; /* AW_MONO_NEVER: re-read before the next guarded call */
	int refreshing;
	const char *why; /* source to announce for the next refresh */
	aw_active_pointer *ptrs;
	int nptrs;
	int64_t due_default_ns, due_channel_ns;
} pstate;

typedef struct {
	aw_policy_listener fn;
	void *ud;
} listener;

struct aw_policy_cache {
	aw_store *s;
	const aw_contracts *c;
	aw_bus *bus;
	aw_policy_opts o;
	pthread_mutex_t mu;
	pthread_cond_t cv, checker_cv;
	entry *entries;
	pstate *projects;
	listener on_change[MAX_LISTENERS], on_platform[MAX_LISTENERS];
	struct {
		aw_policy_kill_fn fn;
		void *ud;
	} on_kill[MAX_LISTENERS];
	int n_change, n_platform, n_kill;
	aw_policy_stats st;
	pthread_t checker;
	int stop, resync_pending;
};

static int64_t now_ns(void)
{
	return aw_clock_mono_ns();
}

static int64_t jittered(const aw_policy_cache *p, int ms)
{
	uint32_t j = 0;
	aw_random_bytes(&j, sizeof j);
	int64_t span = (int64_t)ms * p->o.jitter_pct / 100;
	int64_t off = span ? (int64_t)(j % (uint32_t)(2 * span + 1)) - span : 0;
	return ((int64_t)ms + off) * 1000000LL;
}

static int is_channel(const char *family)
{
	return strcmp(family, "channel_event") == 0;
}

/* ---- lookups (mu held) */

static entry *find_entry(aw_policy_cache *p, const char *project, const char *family,
			 const char *cid, int create)
{
	for (entry *e = p->entries; e; e = e->next)
		if (!strcmp(e->project, project) && !strcmp(e->family, family) &&
		    !strcmp(e->cid, cid))
			return e;
	if (!create)
		return NULL;
	entry *e = aw_calloc(1, sizeof *e);
	if (e && (AW_STR_COPY(e->project, project) < 0 || AW_STR_COPY(e->family, family) < 0 ||
		  AW_STR_COPY(e->cid, cid) < 0)) { /* validated names fit: as out of memory */
		free(e);
		return NULL;
	}
	if (!e)
		return NULL;
	e->next = p->entries;
	p->entries = e;
	return e;
}

static pstate *find_project(aw_policy_cache *p, const char *project, int create)
{
	for (pstate *s = p->projects; s; s = s->next)
		if (!strcmp(s->project, project))
			return s;
	if (!create)
		return NULL;
	pstate *s = aw_calloc(1, sizeof *s);
	if (s && AW_STR_COPY(s->project, project) < 0) { /* a ctx's project fits */
		free(s);
		return NULL;
	}
	if (!s)
		return NULL;
	s->refreshed_ns = AW_MONO_NEVER;
	int64_t t = now_ns();
	s->due_default_ns = t + jittered(p, p->o.interval_ms);
	s->due_channel_ns = t + jittered(p, p->o.channel_interval_ms);
	s->next = p->projects;
	p->projects = s;
	return s;
}

static const char *snapshot_rev(const pstate *s, const char *family, const char *cid)
{
	for (int i = 0; i < s->nptrs; i++)
		if (!strcmp(s->ptrs[i].family, family) && !strcmp(s->ptrs[i].contract_id, cid))
			return s->ptrs[i].revision_id;
	return "";
}

static void announce(aw_policy_cache *p, entry *e, const char *rev, const char *source)
{
	if (e->announced && !strcmp(e->known, rev))
		return;
	if (AW_STR_COPY(e->known, rev) < 0) /* a revision id: fits; else not announced */
		return;
	e->announced = 1;
	for (int i = 0; i < p->n_change; i++)
		p->on_change[i].fn(p->on_change[i].ud, e->project, e->family, e->cid, rev, source);
}

/* Compares a fresh snapshot with the cached entries (of one family class, or
 * all when cls < 0) and announces changes. */
static void apply_snapshot(aw_policy_cache *p, pstate *s, int cls, const char *source)
{
	for (entry *e = p->entries; e; e = e->next) {
		if (strcmp(e->project, s->project) != 0)
			continue;
		if (cls >= 0 && is_channel(e->family) != cls)
			continue;
		const char *rev = snapshot_rev(s, e->family, e->cid);
		if (e->valid && strcmp(e->rev, rev) != 0)
			e->valid = 0;
		if (e->announced || e->valid)
			announce(p, e, rev, source);
	}
}

/* Re-reads one project's pointers; called with mu held, returns with mu held. */
static aw_err refresh(aw_policy_cache *p, pstate *s, int cls, const char *source, aw_error *err)
{
	while (s->refreshing)
		pthread_cond_wait(&p->cv, &p->mu);
	s->refreshing = 1;
	char project[AW_PROJECT_MAX + 1];
	AW_COPY_ARRAY(project, s->project);
	pthread_mutex_unlock(&p->mu);

	aw_ctx ctx;
	aw_ctx_system(&ctx, project);
	snprintf(ctx.principal, sizeof ctx.principal, "policy-cache");
	aw_txn *t = NULL;
	aw_active_pointer *ptrs = NULL;
	int n = 0;
	aw_err e = aw_store_begin(p->s, &ctx, AW_TXN_READ, &t, err);
	if (!e) {
		e = aw_store_active_list(t, &ptrs, &n, err);
		aw_store_rollback(t);
	}
	pthread_mutex_lock(&p->mu);
	s->refreshing = 0;
	p->st.store_reads++;
	if (!e) {
		free(s->ptrs);
		s->ptrs = ptrs;
		s->nptrs = n;
		s->refreshed_ns = now_ns();
		apply_snapshot(p, s, cls, s->why ? s->why : source);
		s->why = NULL;
	}
	pthread_cond_broadcast(&p->cv);
	return e;
}

/* ---- the guard */

aw_err aw_policy_effective(aw_policy_cache *p, const aw_ctx *ctx, const char *family,
			   const char *contract_id, aw_policy *out, aw_error *err)
{
	memset(out, 0, sizeof *out);
	aw_err e = AW_OK;
	pthread_mutex_lock(&p->mu);
	p->st.calls++;
	entry *en = find_entry(p, ctx->project, family, contract_id, 1);
	pstate *ps = find_project(p, ctx->project, 1);
	if (!en || !ps) {
		pthread_mutex_unlock(&p->mu);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	for (;;) {
		char ptr[AW_UUID_STR_LEN + 1];
		if (p->o.mode == AW_GUARD_STRICT) {
			pthread_mutex_unlock(&p->mu);
			aw_txn *t = NULL;
			if (!(e = aw_store_begin(p->s, ctx, AW_TXN_READ, &t, err))) {
				e = aw_store_active_get(t, family, contract_id, ptr, err);
				aw_store_rollback(t);
			}
			pthread_mutex_lock(&p->mu);
			p->st.store_reads++;
			if (e)
				break;
			if (en->valid && strcmp(en->rev, ptr) != 0)
				en->valid = 0;
			if (en->announced || en->valid)
				announce(p, en, ptr, "guard");
		} else {
			if (aw_clock_older_than(ps->refreshed_ns, now_ns(),
						(int64_t)p->o.max_staleness_ms * 1000000LL) &&
			    (e = refresh(p, ps, -1, "guard", err)))
				break;
			if (AW_STR_COPY(ptr, snapshot_rev(ps, family, contract_id)) < 0) {
				e = aw_fail(err, AW_E_INTERNAL, "a cached revision id too long");
				break;
			}
		}
		if (!ptr[0]) {
			en->valid = 0;
			announce(p, en, "", "guard");
			e = aw_fail(err, AW_E_CONTRACT_NOT_FOUND,
				    "the contract has no active revision");
			break;
		}
		if (en->valid && !strcmp(en->rev, ptr)) {
			out->body = json_incref(en->body);
			out->owner = p;
			memcpy(out->revision_id, en->rev, sizeof out->revision_id);
			memcpy(out->body_hash, en->hash, sizeof out->body_hash);
			out->cached_at_ms = en->cached_at_ms;
			break;
		}
		if (en->loading) { /* single flight: someone is loading this key */
			pthread_cond_wait(&p->cv, &p->mu);
			continue;
		}
		en->loading = 1;
		pthread_mutex_unlock(&p->mu);
		aw_revision rev = {0};
		e = aw_contract_active(p->c, p->s, ctx, family, contract_id, &rev, err);
		json_t *body = e ? NULL : json_loads(rev.body, 0, NULL);
		pthread_mutex_lock(&p->mu);
		en->loading = 0;
		p->st.store_reads++;
		p->st.reloads++;
		pthread_cond_broadcast(&p->cv);
		if (!e && !body)
			e = aw_fail(err, AW_E_INTERNAL, "the stored revision does not parse");
		if (e) {
			aw_revision_clear(&rev);
			break;
		}
		json_decref(en->body);
		en->body = body;
		memcpy(en->rev, rev.revision_id, sizeof en->rev);
		memcpy(en->hash, rev.body_hash, sizeof en->hash);
		en->cached_at_ms = aw_clock_wall_ms();
		en->valid = 1;
		aw_revision_clear(&rev);
		announce(p, en, en->rev, "guard");
		/* the load may have seen a newer pointer than the snapshot: loop once
		 * more so the answer is consistent with what the guard knows */
		if (p->o.mode == AW_GUARD_BOUNDED && strcmp(en->rev, ptr) != 0)
			ps->refreshed_ns = AW_MONO_NEVER;
	}
	pthread_mutex_unlock(&p->mu);
	return e;
}

/* Under the cache's lock: the body's count is shared with the cache's entry
 * and other callers (jansson's counts are not safe to share across threads). */
void aw_policy_release(aw_policy *pol)
{
	if (pol->owner)
		pthread_mutex_lock(&pol->owner->mu);
	json_decref(pol->body);
	if (pol->owner)
		pthread_mutex_unlock(&pol->owner->mu);
	pol->body = NULL;
	pol->owner = NULL;
}

/* ---- bus */

int aw_invalidation_decode(const char *payload, size_t len, aw_invalidation *out)
{
	memset(out, 0, sizeof *out);
	json_t *m = json_loadb(payload, len, JSON_REJECT_DUPLICATES, NULL);
	const char *type = json_string_value(json_object_get(m, "event_type"));
	const char *fam = json_string_value(json_object_get(m, "contract_family"));
	const char *cid = json_string_value(json_object_get(m, "contract_id"));
	const char *newr = json_string_value(json_object_get(m, "new_revision_id"));
	json_t *oldj = json_object_get(m, "old_revision_id");
	const char *oldr = json_string_value(oldj);
	int ok = type && fam && cid && newr && aw_uuid_valid(newr) &&
		 (!oldj || json_is_null(oldj) || (oldr && aw_uuid_valid(oldr))) &&
		 (!strcmp(type, "revision_activated") || !strcmp(type, "revision_revoked")) &&
		 AW_STR_COPY(out->event_type, type) == 0 && AW_STR_COPY(out->family, fam) == 0 &&
		 AW_STR_COPY(out->contract_id, cid) == 0 &&
		 AW_STR_COPY(out->new_revision_id, newr) == 0 &&
		 AW_STR_COPY(out->old_revision_id, oldr) == 0;
	json_decref(m);
	return ok ? 0 : -1;
}

/* A suspension's announcement: {"event_type":"project_suspended"} on the
 * project's channel (aw_policy_announce_kill). */
static const char KILL_EVENT[] = "project_suspended";

static int is_kill(const char *payload, size_t len)
{
	json_t *j = json_loadb(payload, len, 0, NULL);
	const char *t = json_string_value(json_object_get(j, "event_type"));
	int k = t && !strcmp(t, KILL_EVENT);
	json_decref(j);
	return k;
}

static void on_message(void *ud, const char *channel, const char *payload, size_t len)
{
	aw_policy_cache *p = ud;
	char project[AW_PROJECT_MAX + 1];
	aw_invalidation m;
	if (aw_keys_invalidate_project(channel, project, sizeof project))
		return;
	if (is_kill(payload, len)) {
		pthread_mutex_lock(&p->mu);
		p->st.bus_events++;
		for (int i = 0; i < p->n_kill; i++)
			p->on_kill[i].fn(p->on_kill[i].ud, project);
		pthread_mutex_unlock(&p->mu);
		return;
	}
	if (aw_invalidation_decode(payload, len, &m))
		return; /* not ours, or malformed: the fallback checker still converges */
	const char *fam = m.family, *cid = m.contract_id, *type = m.event_type;
	const char *oldr = m.old_revision_id;
	const char *active = strcmp(type, "revision_revoked") == 0 ? "" : m.new_revision_id;
	pthread_mutex_lock(&p->mu);
	p->st.bus_events++;
	pstate *ps = find_project(p, project, 0);
	entry *e = find_entry(p, project, fam, cid, 0);
	/* An event that continues what we know is the truth as of its commit:
	 * put it in the snapshot. Anything else (a late redelivery, a gap) makes
	 * the next guarded call re-read the store. The announced revision never
	 * rolls back. */
	int in_order =
		e && e->announced && (!strcmp(e->known, oldr) || !strcmp(type, "revision_revoked"));
	int patched = 0;
	for (int i = 0; ps && in_order && i < ps->nptrs; i++) {
		if (!strcmp(ps->ptrs[i].family, fam) && !strcmp(ps->ptrs[i].contract_id, cid)) {
			/* active: "" or the event's revision id, which fits; else the
			 * next guarded call re-reads the store */
			patched = AW_STR_COPY(ps->ptrs[i].revision_id, active) == 0;
		}
	}
	if (ps && !patched)
		ps->refreshed_ns = AW_MONO_NEVER;
	if (e) {
		if (e->valid && strcmp(e->rev, active) != 0)
			e->valid = 0;
		if (!e->announced || in_order)
			announce(p, e, active, "bus");
	}
	if (!strcmp(project, AW_PLATFORM_PROJECT) && !strcmp(fam, "platform_resource"))
		for (int i = 0; i < p->n_platform; i++)
			p->on_platform[i].fn(p->on_platform[i].ud, project, fam, cid, active,
					     "bus");
	pthread_mutex_unlock(&p->mu);
}

static void on_resync(void *ud)
{
	aw_policy_cache *p = ud;
	pthread_mutex_lock(&p->mu);
	p->st.resyncs++;
	for (pstate *s = p->projects; s; s = s->next) {
		s->refreshed_ns = AW_MONO_NEVER;
		s->why = "resync";
	}
	p->resync_pending = 1;
	pthread_cond_signal(&p->checker_cv);
	pthread_mutex_unlock(&p->mu);
}

/* ---- fallback checker */

static void *checker_main(void *arg)
{
	aw_policy_cache *p = arg;
	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		int64_t t = now_ns(), next = t + 1000000000LL;
		int resync = p->resync_pending;
		p->resync_pending = 0;
		for (pstate *s = p->projects; s && !p->stop; s = s->next) {
			int due_d = resync || t >= s->due_default_ns;
			int due_c = resync || t >= s->due_channel_ns;
			if (due_d || due_c) {
				aw_error err;
				const char *src = resync ? "resync" : "fallback";
				refresh(p, s, due_d && due_c ? -1 : due_c ? 1 : 0, src, &err);
				p->st.fallback_checks++;
				t = now_ns();
				if (due_d)
					s->due_default_ns = t + jittered(p, p->o.interval_ms);
				if (due_c)
					s->due_channel_ns =
						t + jittered(p, p->o.channel_interval_ms);
			}
			if (s->due_default_ns < next)
				next = s->due_default_ns;
			if (s->due_channel_ns < next)
				next = s->due_channel_ns;
		}
		aw_metrics_loop_tick("fallback_checker");
		int64_t wait = next - now_ns();
		if (wait <= 0)
			continue;
		struct timespec until = aw_clock_after(CLOCK_MONOTONIC, (wait + 999999) / 1000000);
		if (!p->stop && !p->resync_pending)
			pthread_cond_timedwait(&p->checker_cv, &p->mu, &until);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* ---- lifecycle */

aw_err aw_policy_cache_new(aw_store *s, const aw_contracts *c, aw_bus *bus, const aw_policy_opts *o,
			   aw_policy_cache **out, aw_error *err)
{
	aw_policy_cache *p = aw_calloc(1, sizeof *p);
	if (!p)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	p->s = s;
	p->c = c;
	p->bus = bus;
	if (o)
		p->o = *o;
	if (p->o.max_staleness_ms <= 0)
		p->o.max_staleness_ms = 1000;
	if (p->o.interval_ms <= 0)
		p->o.interval_ms = 30000;
	if (p->o.channel_interval_ms <= 0)
		p->o.channel_interval_ms = 300000;
	if (p->o.jitter_pct < 0 || p->o.jitter_pct > 50)
		p->o.jitter_pct = 10;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	aw_clock_cond_init(&p->checker_cv);
	if (pthread_create(&p->checker, NULL, checker_main, p) != 0) {
		free(p);
		return aw_fail(err, AW_E_INTERNAL, "cannot start the fallback checker");
	}
	aw_err e = bus ? aw_bus_subscribe(bus, AW_KEYS_INVALIDATE_PATTERN, on_message, on_resync, p,
					  err)
		       : AW_OK;
	if (e) {
		aw_policy_cache_free(p);
		return e;
	}
	*out = p;
	return AW_OK;
}

void aw_policy_cache_free(aw_policy_cache *p)
{
	if (!p)
		return;
	aw_bus_unsubscribe(p->bus); /* no handler runs after this */
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->checker_cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->checker, NULL);
	while (p->entries) {
		entry *n = p->entries->next;
		json_decref(p->entries->body);
		free(p->entries);
		p->entries = n;
	}
	while (p->projects) {
		pstate *n = p->projects->next;
		free(p->projects->ptrs);
		free(p->projects);
		p->projects = n;
	}
	pthread_cond_destroy(&p->cv);
	pthread_cond_destroy(&p->checker_cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

int aw_policy_on_change(aw_policy_cache *p, aw_policy_listener fn, void *ud)
{
	pthread_mutex_lock(&p->mu);
	int ok = p->n_change < MAX_LISTENERS;
	if (ok)
		p->on_change[p->n_change++] = (listener){fn, ud};
	pthread_mutex_unlock(&p->mu);
	return ok ? 0 : -1;
}

int aw_policy_on_platform_change(aw_policy_cache *p, aw_policy_listener fn, void *ud)
{
	pthread_mutex_lock(&p->mu);
	int ok = p->n_platform < MAX_LISTENERS;
	if (ok)
		p->on_platform[p->n_platform++] = (listener){fn, ud};
	pthread_mutex_unlock(&p->mu);
	return ok ? 0 : -1;
}

int aw_policy_on_kill(aw_policy_cache *p, aw_policy_kill_fn fn, void *ud)
{
	pthread_mutex_lock(&p->mu);
	int ok = p->n_kill < MAX_LISTENERS;
	if (ok) {
		p->on_kill[p->n_kill].fn = fn;
		p->on_kill[p->n_kill++].ud = ud;
	}
	pthread_mutex_unlock(&p->mu);
	return ok ? 0 : -1;
}

void aw_policy_off_kill(aw_policy_cache *p, aw_policy_kill_fn fn, void *ud)
{
	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < p->n_kill; i++)
		if (p->on_kill[i].fn == fn && p->on_kill[i].ud == ud)
			p->on_kill[i--] = p->on_kill[--p->n_kill];
	pthread_mutex_unlock(&p->mu);
}

aw_err aw_policy_announce_kill(aw_policy_cache *p, const char *project, aw_error *err)
{
	char channel[AW_PROJECT_MAX + 64];
	if (!p->bus)
		return AW_OK;
	if (aw_keys_invalidate_channel(project, channel, sizeof channel))
		return aw_fail(err, AW_E_TENANT_SLUG, "not a project id");
	return aw_bus_publish(p->bus, channel, "{\"event_type\":\"project_suspended\"}", err);
}

int aw_policy_kill_remote(aw_policy_cache *p)
{
	return p->bus && strcmp(aw_bus_kind(p->bus), "local") != 0 && aw_bus_connected(p->bus);
}

void aw_policy_off(aw_policy_cache *p, aw_policy_listener fn, void *ud)
{
	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < p->n_change; i++)
		if (p->on_change[i].fn == fn && p->on_change[i].ud == ud)
			p->on_change[i--] = p->on_change[--p->n_change];
	for (int i = 0; i < p->n_platform; i++)
		if (p->on_platform[i].fn == fn && p->on_platform[i].ud == ud)
			p->on_platform[i--] = p->on_platform[--p->n_platform];
	pthread_mutex_unlock(&p->mu);
}

void aw_policy_get_stats(aw_policy_cache *p, aw_policy_stats *out)
{
	pthread_mutex_lock(&p->mu);
	*out = p->st;
	pthread_mutex_unlock(&p->mu);
}
