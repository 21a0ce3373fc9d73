/*
 * kv.c - phase-aware Redis access, the migration's counters, inventory and
 * backfill (see kv.h; the gates and the audited phase steps are keymig/). One hiredis connection under a mutex; phases are cached per
 * (project, pattern) for phase_cache_ms and refreshed from the store.
 */
#include "awooop/alloc.h"
#include "awooop/kv.h"

#include <hiredis/hiredis.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "awooop/clock.h"
#include "awooop/log.h"
#include "awooop/redis.h"
#include "awooop/str.h"

typedef enum { PH_NONE, PH_A, PH_B, PH_C, PH_DONE } phase_t;
static const char phase_names[][8] = {"none", "A", "B", "C", "done"}; /* aw_kv_status.phase */

typedef struct cached {
	struct cached *next;
	char project[AW_PROJECT_MAX + 1], pattern[48];
	phase_t phase;
	int64_t read_ns;
} cached;

struct aw_kv {
	aw_redis_url url;
	redisContext *c;
	pthread_mutex_t mu;
	aw_store *s;
	aw_kv_opts o;
	char legacy_project[AW_PROJECT_MAX + 1];
	cached *phases;
};

static int phase_of(const char *name)
{
	for (int i = 0; i <= PH_DONE; i++)
		if (!strcmp(name, phase_names[i]))
			return i;
	return -1;
}

/* ---------------------------------------------------------------- redis */

static redisContext *conn(aw_kv *kv)
{
	if (kv->c && !kv->c->err)
		return kv->c;
	if (kv->c)
		aw_redis_free(kv->c);
	aw_error err = {0};
	kv->c = aw_redis_connect(&kv->url, 2000, &err);
	static _Atomic int64_t logged_ns = AW_MONO_NEVER; /* at most every 10 s */
	int64_t now = aw_clock_mono_ns(), was = atomic_load(&logged_ns);
	if (!kv->c && aw_clock_older_than(was, now, 10000000000LL) &&
	    atomic_compare_exchange_strong(&logged_ns, &was, now))
		aw_log(AW_LOG_WARN, NULL, "key wrapper cannot reach redis", "detail", err.msg,
		       NULL);
	return kv->c;
}

/* Runs one command (printf-style, hiredis %s/%b); NULL reply = broken. */
static redisReply *cmd(aw_kv *kv, const char *fmt, ...)
{
	redisContext *c = conn(kv);
	if (!c)
		return NULL;
	va_list ap;
	va_start(ap, fmt);
	redisReply *r = redisvCommand(c, fmt, ap);
	va_end(ap);
	return r;
}

#include <stdarg.h>

aw_err aw_kv_open(const char *redis_url, aw_store *s, const aw_kv_opts *o, aw_kv **out,
		  aw_error *err)
{
	aw_kv *kv = aw_calloc(1, sizeof *kv);
	if (!kv)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	aw_err e = aw_redis_url_parse(redis_url, &kv->url, err);
	if (e) {
		free(kv);
		return e;
	}
	kv->s = s;
	if (o)
		kv->o = *o;
	int *win[] = {&kv->o.window_a_s, &kv->o.window_b_s, &kv->o.window_c_s};
	const int def_days[] = {30, 14, 7};
	for (int i = 0; i < 3; i++)
		*win[i] = *win[i] == AW_KV_WINDOW_NONE ? 0
			  : *win[i] <= 0	       ? def_days[i] * 86400
						       : *win[i];
	if (kv->o.phase_cache_ms <= 0)
		kv->o.phase_cache_ms = 1000;
	pthread_mutex_init(&kv->mu, NULL);
	if (AW_STR_COPY(kv->legacy_project,
			kv->o.legacy_project ? kv->o.legacy_project : "awoooi") < 0) {
		aw_kv_close(kv);
		return aw_fail(err, AW_E_CONFIG, "the legacy project is longer than %d bytes",
			       AW_PROJECT_MAX);
	}
	kv->o.legacy_project = kv->legacy_project;
	if (!(kv->c = aw_redis_connect(&kv->url, 2000, err))) {
		aw_kv_close(kv);
		return err->err;
	}
	*out = kv;
	return AW_OK;
}

void aw_kv_close(aw_kv *kv)
{
	if (!kv)
		return;
	if (kv->c)
		aw_redis_free(kv->c);
	while (kv->phases) {
		cached *n = kv->phases->next;
		free(kv->phases);
		kv->phases = n;
	}
	pthread_mutex_destroy(&kv->mu);
	free(kv);
}

/* ---------------------------------------------------------------- phases */

const char *aw_kv_owner(const aw_key_pattern *p, const aw_ctx *ctx)
{
	return p->scope == AW_KEY_PLATFORM ? AW_PLATFORM_PROJECT : ctx->project;
}

static aw_err read_phase(aw_kv *kv, const char *project, const char *pattern, phase_t *ph,
			 char *since, aw_error *err)
{
	aw_ctx c;
	aw_ctx_system(&c, project);
	aw_txn *t = NULL;
	char name[8];
	aw_err e = aw_store_begin(kv->s, &c, AW_TXN_READ, &t, err);
	if (e)
		return e;
	e = aw_store_keymig_get(t, pattern, name, sizeof name, since, err);
	aw_store_rollback(t);
	if (!e)
		*ph = (phase_t)phase_of(name);
	return e;
}

/* Phase for (project, pattern); projects that never had legacy keys are done. */
static aw_err phase_for(aw_kv *kv, const aw_key_pattern *p, const char *project, phase_t *ph,
			aw_error *err)
{
	if (p->scope == AW_KEY_TENANT && strcmp(project, kv->legacy_project) != 0) {
		*ph = PH_DONE;
		return AW_OK;
	}
	int64_t now = aw_clock_mono_ns();
	for (cached *c = kv->phases; c; c = c->next) {
		if (!strcmp(c->project, project) && !strcmp(c->pattern, p->name) &&
		    !aw_clock_older_than(c->read_ns, now,
					 (int64_t)kv->o.phase_cache_ms * 1000000LL - 1)) {
			*ph = c->phase;
			return AW_OK;
		}
	}
	char since[AW_TS_LEN + 1];
	aw_err e = read_phase(kv, project, p->name, ph, since, err);
	if (e)
		return e;
	for (cached *c = kv->phases; c; c = c->next) {
		if (!strcmp(c->project, project) && !strcmp(c->pattern, p->name)) {
			c->phase = *ph;
			c->read_ns = now;
			return AW_OK;
		}
	}
	cached *c = aw_calloc(1, sizeof *c);
	if (c && (AW_STR_COPY(c->project, project) < 0 || AW_STR_COPY(c->pattern, p->name) < 0)) {
		free(c); /* not cached: read again next time */
		c = NULL;
	}
	if (c) {
		c->phase = *ph;
		c->read_ns = now;
		c->next = kv->phases;
		kv->phases = c;
	}
	return AW_OK;
}

/* Counters are kept per phase in time buckets (window/30 s, at least 1 s) that
 * expire after two windows, so a gate looks at exactly its last window. */
static int window_of(const aw_kv *kv, phase_t ph)
{
	return ph == PH_A ? kv->o.window_a_s : ph == PH_B ? kv->o.window_b_s : kv->o.window_c_s;
}

static int bucket_s(const aw_kv *kv, phase_t ph)
{
	int b = window_of(kv, ph) / 30;
	return b < 1 ? 1 : b;
}

static void count(aw_kv *kv, const char *project, const aw_key_pattern *p, phase_t ph,
		  const char *field)
{
	char key[256];
	int bs = bucket_s(kv, ph);
	long long bucket = aw_clock_wall_ms() / 1000 / bs;
	snprintf(key, sizeof key, "%s:keymig:%s:%s:%lld", project, p->name, phase_names[ph],
		 bucket);
	redisReply *r = cmd(kv, "HINCRBY %s %s 1", key, field);
	if (r)
		freeReplyObject(r);
	r = cmd(kv, "EXPIRE %s %d", key, 2 * window_of(kv, ph) + bs);
	if (r)
		freeReplyObject(r);
}

/* ---------------------------------------------------------------- operations */

typedef struct {
	const aw_key_pattern *p;
	const char *project;
	phase_t ph;
	char old_key[512], new_key[512];
} target;

static aw_err resolve(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals,
		      int n, target *t, aw_error *err)
{
	t->p = aw_keys_find(pattern);
	if (!t->p)
		return aw_fail(err, AW_E_KEYS_PATTERN, "unknown key pattern");
	t->project = aw_kv_owner(t->p, ctx);
	aw_err e = aw_keys_build(t->p, 1, t->project, vals, n, t->new_key, sizeof t->new_key, err);
	if (!e)
		e = aw_keys_build(t->p, 0, t->project, vals, n, t->old_key, sizeof t->old_key, err);
	if (!e)
		e = phase_for(kv, t->p, t->project, &t->ph, err);
	return e;
}

/* The keys a write goes to in the target's phase, the new one first (its
 * answer is the one callers see): legacy only before A, both in A and B, new
 * only from C on. Returns how many. */
static int write_keys(const target *t, const char *keys[2])
{
	int n = 0;
	if (t->ph >= PH_A)
		keys[n++] = t->new_key;
	if (t->ph <= PH_B)
		keys[n++] = t->old_key;
	return n;
}

/* Frees a reply; AW_E_BUS_UNAVAILABLE for a broken connection or an error. */
static aw_err reply_ok(redisReply *r, aw_error *err)
{
	int ok = r && r->type != REDIS_REPLY_ERROR;
	if (r)
		freeReplyObject(r);
	return ok ? AW_OK : aw_fail(err, AW_E_BUS_UNAVAILABLE, "redis command failed");
}

/* Copies old to new when new is missing: DUMP + PTTL + RESTORE (no REPLACE,
 * so a newer new key wins). 1 copied, 0 nothing to copy, -1 error. */
static int copy_key(aw_kv *kv, const char *from, const char *to)
{
	redisReply *d = cmd(kv, "DUMP %s", from);
	if (!d)
		return -1;
	if (d->type != REDIS_REPLY_STRING) {
		freeReplyObject(d);
		return 0;
	}
	redisReply *ttl = cmd(kv, "PTTL %s", from);
	long long raw = ttl && ttl->type == REDIS_REPLY_INTEGER ? ttl->integer : -2;
	long long ms = raw > 0 ? raw : 0;
	if (ttl)
		freeReplyObject(ttl);
	if (raw == -2) { /* expired meanwhile (or the reply failed) */
		freeReplyObject(d);
		return 0;
	}
	redisReply *r = cmd(kv, "RESTORE %s %lld %b", to, ms, d->str, d->len);
	freeReplyObject(d);
	int ok = r && (r->type == REDIS_REPLY_STATUS ||
		       (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "BUSYKEY", 7) == 0));
	int copied = r && r->type == REDIS_REPLY_STATUS;
	if (r)
		freeReplyObject(r);
	return ok ? copied : -1;
}

/* Makes the key to read: in B and C a miss on the new key falls back to the
 * legacy key, backfills it and is counted. Returns the key to read. */
static const char *read_key(aw_kv *kv, target *t)
{
	switch (t->ph) {
	case PH_NONE: return t->old_key;
	case PH_A: {
		count(kv, t->project, t->p, t->ph, "reads");
		redisReply *r = cmd(kv, "EXISTS %s", t->new_key);
		if (r && r->type == REDIS_REPLY_INTEGER && r->integer)
			count(kv, t->project, t->p, t->ph, "new_hits");
		if (r)
			freeReplyObject(r);
		return t->old_key;
	}
	case PH_B:
	case PH_C: {
		count(kv, t->project, t->p, t->ph, "reads");
		redisReply *r = cmd(kv, "EXISTS %s", t->new_key);
		int have = r && r->type == REDIS_REPLY_INTEGER && r->integer;
		if (r)
			freeReplyObject(r);
		if (!have && copy_key(kv, t->old_key, t->new_key) == 1)
			count(kv, t->project, t->p, t->ph,
			      t->ph == PH_B ? "fallbacks" : "old_reads");
		return t->new_key;
	}
	default: return t->new_key;
	}
}

/* Before a mutation that builds on the current value (INCR, HSET, RPUSH), the
 * new key must hold the legacy value. */
static void prime_new(aw_kv *kv, target *t)
{
	if (t->ph >= PH_A && t->ph <= PH_C) {
		redisReply *r = cmd(kv, "EXISTS %s", t->new_key);
		int have = r && r->type == REDIS_REPLY_INTEGER && r->integer;
		if (r)
			freeReplyObject(r);
		if (!have)
			copy_key(kv, t->old_key, t->new_key);
	}
}

#define BEGIN_OP()                                              \
	target t;                                               \
	pthread_mutex_lock(&kv->mu);                            \
	aw_err e = resolve(kv, ctx, pattern, vals, n, &t, err); \
	if (e) {                                                \
		pthread_mutex_unlock(&kv->mu);                  \
		return e;                                       \
	}

#define UNAVAILABLE() aw_fail(err, AW_E_BUS_UNAVAILABLE, "redis command failed")

aw_err aw_kv_get(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals, int n,
		 char **out, aw_error *err)
{
	BEGIN_OP();
	*out = NULL;
	redisReply *r = cmd(kv, "GET %s", read_key(kv, &t));
	if (!r)
		e = UNAVAILABLE();
	else if (r->type == REDIS_REPLY_STRING)
		*out = aw_strdup(r->str);
	if (r)
		freeReplyObject(r);
	pthread_mutex_unlock(&kv->mu);
	return e;
}

aw_err aw_kv_set(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals, int n,
		 const char *value, int ttl_s, aw_error *err)
{
	BEGIN_OP();
	const char *keys[2];
	for (int i = 0, nk = write_keys(&t, keys); i < nk && !e; i++)
		e = reply_ok(ttl_s > 0 ? cmd(kv, "SET %s %s EX %d", keys[i], value, ttl_s)
				       : cmd(kv, "SET %s %s", keys[i], value),
			     err);
	pthread_mutex_unlock(&kv->mu);
	return e;
}

aw_err aw_kv_set_nx(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals,
		    int n, const char *value, int ttl_s, int *created, aw_error *err)
{
	BEGIN_OP();
	*created = 0;
	const char *keys[2];
	int nk = write_keys(&t, keys);
	/* the first key written decides (the new key from phase A on); a second
	 * (dual-write) copy follows the decision */
	redisReply *r = cmd(kv, "SET %s %s NX EX %d", keys[0], value, ttl_s > 0 ? ttl_s : 1);
	if (!r || r->type == REDIS_REPLY_ERROR)
		e = UNAVAILABLE();
	else
		*created = r->type == REDIS_REPLY_STATUS;
	if (r)
		freeReplyObject(r);
	if (!e && *created && nk == 2)
		e = reply_ok(cmd(kv, "SET %s %s EX %d", keys[1], value, ttl_s > 0 ? ttl_s : 1),
			     err);
	pthread_mutex_unlock(&kv->mu);
	return e;
}

/* A lease: taken when free, renewed when ours, in one step. */
static const char lease_lua[] =
	"local v = redis.call('GET', KEYS[1]) "
	"if v == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end "
	"if not v then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end "
	"return 0";
static const char release_lua[] = "if redis.call('GET', KEYS[1]) == ARGV[1] then "
				  "return redis.call('DEL', KEYS[1]) end return 0";

aw_err aw_kv_lease(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals,
		   int n, const char *holder, int ttl_ms, int release, int *held, aw_error *err)
{
	BEGIN_OP();
	const char *keys[2];
	write_keys(&t, keys);
	char ttl[24];
	snprintf(ttl, sizeof ttl, "%d", ttl_ms > 0 ? ttl_ms : 1);
	redisReply *r = release ? cmd(kv, "EVAL %s 1 %s %s", release_lua, keys[0], holder)
				: cmd(kv, "EVAL %s 1 %s %s %s", lease_lua, keys[0], holder, ttl);
	*held = 0;
	if (!r || r->type != REDIS_REPLY_INTEGER)
		e = UNAVAILABLE();
	else
		*held = !release && r->integer == 1;
	if (r)
		freeReplyObject(r);
	pthread_mutex_unlock(&kv->mu);
	return e;
}

aw_err aw_kv_del(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals, int n,
		 aw_error *err)
{
	BEGIN_OP();
	/* a delete removes both, whatever the phase: a legacy copy must not
	 * resurrect a deleted value through a later fallback */
	redisReply *r = cmd(kv, "DEL %s %s", t.old_key, t.new_key);
	if (!r)
		e = UNAVAILABLE();
	else
		freeReplyObject(r);
	pthread_mutex_unlock(&kv->mu);
	return e;
}

aw_err aw_kv_incr(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals, int n,
		  long long by, long long *out, aw_error *err)
{
	BEGIN_OP();
	prime_new(kv, &t);
	const char *keys[2];
	for (int i = 0, nk = write_keys(&t, keys); i < nk && !e; i++) {
		redisReply *r = cmd(kv, "INCRBY %s %lld", keys[i], by);
		if (!r || r->type != REDIS_REPLY_INTEGER)
			e = UNAVAILABLE();
		else if (i == 0) /* the first key written answers */
			*out = r->integer;
		if (r)
			freeReplyObject(r);
	}
	pthread_mutex_unlock(&kv->mu);
	return e;
}

aw_err aw_kv_expire(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals,
		    int n, int ttl_s, aw_error *err)
{
	BEGIN_OP();
	const char *keys[2];
	for (int i = 0, nk = write_keys(&t, keys); i < nk && !e; i++)
		e = reply_ok(cmd(kv, "EXPIRE %s %d", keys[i], ttl_s), err);
	pthread_mutex_unlock(&kv->mu);
	return e;
}

aw_err aw_kv_hset(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals, int n,
		  const char *field, const char *value, aw_error *err)
{
	BEGIN_OP();
	prime_new(kv, &t);
	const char *keys[2];
	for (int i = 0, nk = write_keys(&t, keys); i < nk && !e; i++)
		e = reply_ok(cmd(kv, "HSET %s %s %s", keys[i], field, value), err);
	pthread_mutex_unlock(&kv->mu);
	return e;
}

aw_err aw_kv_hget(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals, int n,
		  const char *field, char **out, aw_error *err)
{
	BEGIN_OP();
	*out = NULL;
	redisReply *r = cmd(kv, "HGET %s %s", read_key(kv, &t), field);
	if (!r)
		e = UNAVAILABLE();
	else if (r->type == REDIS_REPLY_STRING)
		*out = aw_strdup(r->str);
	if (r)
		freeReplyObject(r);
	pthread_mutex_unlock(&kv->mu);
	return e;
}

aw_err aw_kv_rpush(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals,
		   int n, const char *value, aw_error *err)
{
	BEGIN_OP();
	prime_new(kv, &t);
	const char *keys[2];
	for (int i = 0, nk = write_keys(&t, keys); i < nk && !e; i++)
		e = reply_ok(cmd(kv, "RPUSH %s %s", keys[i], value), err);
	pthread_mutex_unlock(&kv->mu);
	return e;
}

aw_err aw_kv_lrange(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals,
		    int n, long start, long stop, char ***items, int *nitems, aw_error *err)
{
	BEGIN_OP();
	*items = NULL;
	*nitems = 0;
	redisReply *r = cmd(kv, "LRANGE %s %ld %ld", read_key(kv, &t), start, stop);
	if (!r || r->type != REDIS_REPLY_ARRAY) {
		e = UNAVAILABLE();
	} else {
		*items = aw_calloc(r->elements + 1, sizeof **items);
		for (size_t i = 0; *items && i < r->elements; i++)
			(*items)[i] = aw_strdup(r->element[i]->str ? r->element[i]->str : "");
		*nitems = (int)r->elements;
	}
	if (r)
		freeReplyObject(r);
	pthread_mutex_unlock(&kv->mu);
	return e;
}

/* ---------------------------------------------------------------- migration */

/* Sums the counters of phase ph over its last window. */
static void read_counters(aw_kv *kv, const char *project, const aw_key_pattern *p, phase_t ph,
			  aw_kv_status *st)
{
	st->reads = st->new_hits = st->fallbacks = st->old_reads = 0;
	if (ph == PH_NONE || ph == PH_DONE)
		return;
	int bs = bucket_s(kv, ph);
	long long now = aw_clock_wall_ms() / 1000;
	long long first = (now - window_of(kv, ph)) / bs, last = now / bs;
	for (long long b = first; b <= last; b++) {
		char key[256];
		snprintf(key, sizeof key, "%s:keymig:%s:%s:%lld", project, p->name, phase_names[ph],
			 b);
		redisReply *r = cmd(kv, "HMGET %s reads new_hits fallbacks old_reads", key);
		long long *f[] = {&st->reads, &st->new_hits, &st->fallbacks, &st->old_reads};
		for (int i = 0; r && r->type == REDIS_REPLY_ARRAY && i < 4; i++)
			if (r->element[i]->type == REDIS_REPLY_STRING)
				*f[i] += strtoll(r->element[i]->str, NULL, 10);
		if (r)
			freeReplyObject(r);
	}
}

aw_err aw_kv_status_get(aw_kv *kv, const aw_ctx *ctx, const char *pattern, aw_kv_status *st,
			aw_error *err)
{
	memset(st, 0, sizeof *st);
	const aw_key_pattern *p = aw_keys_find(pattern);
	if (!p)
		return aw_fail(err, AW_E_KEYS_PATTERN, "unknown key pattern");
	phase_t ph;
	const char *project = aw_kv_owner(p, ctx);
	aw_err e = read_phase(kv, project, p->name, &ph, st->since, err);
	if (e)
		return e;
	AW_COPY_ARRAY(st->phase, phase_names[ph]);
	pthread_mutex_lock(&kv->mu);
	read_counters(kv, project, p, ph, st);
	pthread_mutex_unlock(&kv->mu);
	return AW_OK;
}

int aw_kv_phase_of(const char *name)
{
	return name ? phase_of(name) : -1;
}

const char *aw_kv_phase_name(int phase)
{
	return phase >= PH_NONE && phase <= PH_DONE ? phase_names[phase] : NULL;
}

int aw_kv_window_s(const aw_kv *kv, int phase)
{
	return window_of(kv, (phase_t)phase);
}

void aw_kv_counters(aw_kv *kv, const char *project, const char *pattern, int phase,
		    aw_kv_status *st)
{
	const aw_key_pattern *p = aw_keys_find(pattern);
	if (!p || phase < PH_NONE || phase > PH_DONE)
		return;
	pthread_mutex_lock(&kv->mu);
	read_counters(kv, project, p, (phase_t)phase, st);
	pthread_mutex_unlock(&kv->mu);
}

void aw_kv_phases_forget(aw_kv *kv)
{
	pthread_mutex_lock(&kv->mu);
	for (cached *cc = kv->phases; cc; cc = cc->next)
		cc->read_ns = AW_MONO_NEVER;
	pthread_mutex_unlock(&kv->mu);
}

/* ---------------------------------------------------------------- inventory */

aw_err aw_kv_inventory(const char *redis_url, aw_kv_inv_row *rows, long long *unknown,
		       long long *total, char unknown_sample[5][128], aw_kv_progress progress,
		       void *ud, aw_error *err)
{
	aw_kv tmp = {0};
	aw_err e = aw_redis_url_parse(redis_url, &tmp.url, err);
	if (e)
		return e;
	if (!(tmp.c = aw_redis_connect(&tmp.url, 2000, err)))
		return err->err;
	memset(rows, 0, sizeof *rows * (size_t)aw_keys_count());
	*unknown = *total = 0;
	char cursor[32] = "0";
	do {
		redisReply *r = cmd(&tmp, "SCAN %s COUNT 2000", cursor);
		if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
			if (r)
				freeReplyObject(r);
			e = aw_fail(err, AW_E_BUS_UNAVAILABLE, "SCAN failed");
			break;
		}
		if (AW_STR_COPY(cursor, r->element[0]->str) < 0) { /* a cut cursor skips keys */
			freeReplyObject(r);
			e = aw_fail(err, AW_E_BUS_UNAVAILABLE, "SCAN answered a malformed cursor");
			break;
		}
		redisReply *keys = r->element[1];
		/* classify, then PTTL (pipelined) for keys that must expire */
		int *want_ttl = aw_calloc(keys->elements + 1, sizeof *want_ttl);
		int pending = 0;
		for (size_t i = 0; i < keys->elements; i++) {
			int modern;
			char project[AW_PROJECT_MAX + 1];
			const aw_key_pattern *p = aw_keys_classify(keys->element[i]->str, &modern,
								   project, sizeof project);
			(*total)++;
			if (!p) {
				if (*unknown < 5) /* shown to people */
					aw_str_show(unknown_sample[*unknown], 128,
						    keys->element[i]->str);
				(*unknown)++;
				continue;
			}
			int idx = (int)(p - aw_keys_at(0));
			if (modern)
				rows[idx].modern++;
			else
				rows[idx].legacy++;
			if (p->ttl_s > 0) {
				redisAppendCommand(tmp.c, "PTTL %s", keys->element[i]->str);
				want_ttl[i] = idx + 1;
				pending++;
			}
		}
		for (size_t i = 0; i < keys->elements && pending; i++) {
			if (!want_ttl[i])
				continue;
			redisReply *t = NULL;
			if (redisGetReply(tmp.c, (void **)&t) != REDIS_OK)
				break;
			if (t->type == REDIS_REPLY_INTEGER && t->integer == -1)
				rows[want_ttl[i] - 1].missing_ttl++;
			freeReplyObject(t);
			pending--;
		}
		free(want_ttl);
		freeReplyObject(r);
		if (progress)
			progress(ud, *total);
	} while (strcmp(cursor, "0") != 0);
	aw_redis_free(tmp.c);
	return e;
}

/* ---------------------------------------------------------------- backfill */

static void sleep_ns(int64_t ns)
{
	if (ns <= 0)
		return;
	struct timespec ts = {ns / 1000000000LL, ns % 1000000000LL};
	nanosleep(&ts, NULL);
}

/* The components of key under template t, in order; -1 if it does not fit. */
static int extract(const char *t, const char *key, char *buf, size_t cap, const char **vals,
		   int max)
{
	int n = 0;
	size_t o = 0;
	while (*t) {
		if (*t == '{') {
			const char *end = strchr(key, ':');
			size_t len = end ? (size_t)(end - key) : strlen(key);
			if (n == max || o + len + 1 > cap || len == 0)
				return -1;
			memcpy(buf + o, key, len);
			buf[o + len] = '\0';
			vals[n++] = buf + o;
			o += len + 1;
			key += len;
			t = strchr(t, '}') + 1;
		} else {
			if (*t++ != *key++)
				return -1;
		}
	}
	return *key ? -1 : n;
}

aw_err aw_kv_backfill(aw_kv *kv, const aw_ctx *ctx, const char *pattern, int rate,
		      long long *copied, long long *skipped, aw_kv_progress progress, void *ud,
		      aw_error *err)
{
	*copied = *skipped = 0;
	const aw_key_pattern *p = aw_keys_find(pattern);
	if (!p)
		return aw_fail(err, AW_E_KEYS_PATTERN, "unknown key pattern");
	const char *project = aw_kv_owner(p, ctx);
	if (p->scope == AW_KEY_TENANT && strcmp(project, kv->legacy_project) != 0)
		return AW_OK; /* this project never had legacy keys */
	/* the legacy template as a glob: every {component} becomes '*' */
	char glob[256];
	size_t o = 0;
	for (const char *t = p->legacy; *t && o < sizeof glob - 2; t++) {
		if (*t == '{') {
			glob[o++] = '*';
			t = strchr(t, '}');
		} else {
			glob[o++] = *t;
		}
	}
	glob[o] = '\0';
	char ckey[256], cursor[32] = "0";
	snprintf(ckey, sizeof ckey, "%s:keymig:%s:backfill_cursor", project, p->name);
	pthread_mutex_lock(&kv->mu);
	redisReply *r = cmd(kv, "GET %s", ckey);
	if (r && r->type == REDIS_REPLY_STRING && AW_STR_COPY(cursor, r->str) < 0)
		AW_COPY_ARRAY(cursor, "0"); /* not a cursor of ours: start over (idempotent) */
	if (r)
		freeReplyObject(r);
	pthread_mutex_unlock(&kv->mu);
	int64_t t0 = aw_clock_mono_ns();
	long long done = 0;
	aw_err e = AW_OK;
	do {
		pthread_mutex_lock(&kv->mu);
		r = cmd(kv, "SCAN %s MATCH %s COUNT 1000", cursor, glob);
		if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
			if (r)
				freeReplyObject(r);
			pthread_mutex_unlock(&kv->mu);
			e = aw_fail(err, AW_E_BUS_UNAVAILABLE, "SCAN failed");
			break;
		}
		if (AW_STR_COPY(cursor, r->element[0]->str) < 0) { /* a cut cursor skips keys */
			freeReplyObject(r);
			pthread_mutex_unlock(&kv->mu);
			e = aw_fail(err, AW_E_BUS_UNAVAILABLE, "SCAN answered a malformed cursor");
			break;
		}
		redisReply *keys = r->element[1];
		/* one batch, pipelined: DUMP + PTTL of every legacy key, then RESTORE
		 * (no REPLACE: an existing new key is newer and wins) */
		size_t nk = keys->elements;
		char(*to)[512] = aw_calloc(nk + 1, sizeof *to);
		int *use = aw_calloc(nk + 1, sizeof *use);
		redisReply **dump = aw_calloc(nk + 1, sizeof *dump);
		long long *ms = aw_calloc(nk + 1, sizeof *ms);
		if (!to || !use || !dump || !ms) {
			e = aw_fail(err, AW_E_NOMEM, "out of memory");
		}
		int queued = 0;
		for (size_t i = 0; !e && i < nk; i++) {
			int modern;
			char pj[AW_PROJECT_MAX + 1];
			if (aw_keys_classify(keys->element[i]->str, &modern, pj, sizeof pj) != p ||
			    modern)
				continue;
			char compbuf[512];
			const char *vals[8];
			int nv = extract(p->legacy, keys->element[i]->str, compbuf, sizeof compbuf,
					 vals, 8);
			aw_error berr;
			if (nv < 0 ||
			    aw_keys_build(p, 1, project, vals, nv, to[i], sizeof to[i], &berr)) {
				(*skipped)++;
				continue;
			}
			use[i] = 1;
			redisAppendCommand(kv->c, "DUMP %s", keys->element[i]->str);
			redisAppendCommand(kv->c, "PTTL %s", keys->element[i]->str);
			queued++;
		}
		for (size_t i = 0; !e && i < nk; i++) {
			if (!use[i])
				continue;
			redisReply *t = NULL;
			if (redisGetReply(kv->c, (void **)&dump[i]) != REDIS_OK ||
			    redisGetReply(kv->c, (void **)&t) != REDIS_OK) {
				e = aw_fail(err, AW_E_BUS_UNAVAILABLE,
					    "redis failed during backfill");
				break;
			}
			ms[i] = t->type == REDIS_REPLY_INTEGER ? t->integer : -2;
			freeReplyObject(t);
		}
		int restores = 0;
		for (size_t i = 0; !e && i < nk; i++) {
			if (!use[i] || !dump[i] || dump[i]->type != REDIS_REPLY_STRING ||
			    ms[i] == -2) {
				use[i] = 0; /* expired between SCAN and DUMP */
				continue;
			}
			redisAppendCommand(kv->c, "RESTORE %s %lld %b", to[i],
					   ms[i] > 0 ? ms[i] : 0, dump[i]->str, dump[i]->len);
			restores++;
		}
		for (size_t i = 0; !e && i < nk; i++) {
			if (!use[i])
				continue;
			redisReply *t = NULL;
			if (redisGetReply(kv->c, (void **)&t) != REDIS_OK) {
				e = aw_fail(err, AW_E_BUS_UNAVAILABLE,
					    "redis failed during backfill");
				break;
			}
			if (t->type == REDIS_REPLY_STATUS)
				(*copied)++;
			else if (t->type == REDIS_REPLY_ERROR && !strncmp(t->str, "BUSYKEY", 7))
				(*skipped)++;
			else
				e = aw_fail(err, AW_E_BUS_UNAVAILABLE, "RESTORE failed: %s",
					    t->str);
			freeReplyObject(t);
			done++;
		}
		for (size_t i = 0; dump && i < nk; i++)
			if (dump[i])
				freeReplyObject(dump[i]);
		free(to);
		free(use);
		free(dump);
		free(ms);
		(void)queued;
		(void)restores;
		if (rate > 0 && !e) { /* pace to `rate` keys per second */
			pthread_mutex_unlock(&kv->mu);
			sleep_ns(t0 + done * 1000000000LL / rate - aw_clock_mono_ns());
			pthread_mutex_lock(&kv->mu);
		}
		freeReplyObject(r);
		redisReply *s = cmd(kv, "SET %s %s", ckey, cursor); /* resume point */
		if (s)
			freeReplyObject(s);
		pthread_mutex_unlock(&kv->mu);
		if (progress)
			progress(ud, done);
	} while (!e && strcmp(cursor, "0") != 0);
	if (!e) {
		pthread_mutex_lock(&kv->mu);
		r = cmd(kv, "DEL %s", ckey);
		if (r)
			freeReplyObject(r);
		pthread_mutex_unlock(&kv->mu);
	}
	return e;
}
