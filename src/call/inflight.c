/*
 * inflight.c - the in-flight registry every door of a process shares (see
 * call.h): the projects with calls here, each with its calls (every door's,
 * listed) and their count per door, and the watcher thread that cuts,
 * renews, reaps and forgets.
 */
#include "awooop/alloc.h"
#include "awooop/call.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "awooop/budget.h"
#include "awooop/clock.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/str.h"

#define WATCH_MS 500
#define WATCH_BUS_MS 5000

typedef struct {
	char project[AW_PROJECT_MAX + 1];
	long calls[AW_CALLS_DOORS];
	int64_t idle_ns;   /* when its calls here last went to 0 */
	aw_call *calls_in; /* its calls here, every door's (rnext, rprev) */
} proj;

struct aw_calls {
	aw_calls_opts o;
	char holder[96];
	pthread_mutex_t mu; /* projs, doors, the calls' registry fields */
	pthread_cond_t cv;  /* the watcher's wake-up */
	proj *projs;	    /* sorted by name */
	int nprojs, cap;
	const aw_door *doors[AW_CALLS_DOORS]; /* NULL: a free slot */
	int stop, check_now;
	pthread_t th;
	int started;
};

/* ------------------------------------------------------------ the table */

/* Caller holds mu. The index of project's entry, or -(where it goes) - 1. */
static int find(const aw_calls *r, const char *project)
{
	int lo = 0, hi = r->nprojs;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2, cmp = strcmp(r->projs[mid].project, project);
		if (!cmp)
			return mid;
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -lo - 1;
}

/* Caller holds mu. project's entry, added when absent (NULL: no memory, or
 * not a project id: longer than AW_PROJECT_MAX, never listed cut). */
static proj *get(aw_calls *r, const char *project)
{
	int i = find(r, project);
	if (i >= 0)
		return &r->projs[i];
	if (strlen(project) >= sizeof r->projs[0].project)
		return NULL;
	i = -i - 1;
	if (r->nprojs == r->cap) {
		int cap = r->cap ? r->cap * 2 : 16;
		proj *p = aw_realloc(r->projs, (size_t)cap * sizeof *p);
		if (!p)
			return NULL;
		r->projs = p;
		r->cap = cap;
	}
	memmove(&r->projs[i + 1], &r->projs[i], (size_t)(r->nprojs - i) * sizeof *r->projs);
	r->nprojs++;
	memset(&r->projs[i], 0, sizeof r->projs[i]);
	(void)!AW_STR_COPY(r->projs[i].project, project); /* fits: checked above */
	return &r->projs[i];
}

static long total(const proj *p)
{
	long n = 0;
	for (int d = 0; d < AW_CALLS_DOORS; d++)
		n += p->calls[d];
	return n;
}

int aw_calls_enter(aw_calls *r, int slot, aw_call *c, const char *project, long bound, long *held)
{
	if (held)
		*held = 0;
	if (slot < 0 || slot >= AW_CALLS_DOORS)
		return -1;
	pthread_mutex_lock(&r->mu);
	proj *p = r->doors[slot] ? get(r, project) : NULL;
	int rc = !r->doors[slot] ? 2 : !p ? -1 : bound > 0 && p->calls[slot] >= bound ? 1 : 0;
	if (!rc) {
		p->calls[slot]++;
		c->door = r->doors[slot];
		c->slot = slot;
		c->project = project;
		c->t0_ns = aw_clock_mono_ns();
		c->rprev = NULL;
		c->rnext = p->calls_in;
		if (p->calls_in)
			p->calls_in->rprev = c;
		p->calls_in = c;
	}
	if (held && p)
		*held = p->calls[slot];
	pthread_mutex_unlock(&r->mu);
	return rc;
}

void aw_calls_leave(aw_calls *r, aw_call *c, long *held)
{
	if (held)
		*held = 0;
	if (!c->door)
		return;
	pthread_mutex_lock(&r->mu);
	int i = find(r, c->project); /* listed: its entry is there */
	proj *p = i >= 0 ? &r->projs[i] : NULL;
	if (p) {
		if (c->rprev)
			c->rprev->rnext = c->rnext;
		else
			p->calls_in = c->rnext;
		if (c->rnext)
			c->rnext->rprev = c->rprev;
		if (--p->calls[c->slot] == 0 && !total(p))
			p->idle_ns = aw_clock_mono_ns();
		if (held)
			*held = p->calls[c->slot];
	}
	c->door = NULL;
	c->rnext = c->rprev = NULL;
	pthread_mutex_unlock(&r->mu);
}

void aw_calls_each(aw_calls *r, int slot, const char *project, void (*fn)(aw_call *c, void *ud),
		   void *ud)
{
	pthread_mutex_lock(&r->mu);
	int i = find(r, project);
	for (aw_call *c = i >= 0 ? r->projs[i].calls_in : NULL; c; c = c->rnext)
		if (c->slot == slot)
			fn(c, ud);
	pthread_mutex_unlock(&r->mu);
}

/* Caller holds mu. The calls of slot (-1: of every door) over every project. */
static long busy(const aw_calls *r, int slot)
{
	long n = 0;
	for (int i = 0; i < r->nprojs; i++)
		n += slot < 0		     ? total(&r->projs[i])
		     : slot < AW_CALLS_DOORS ? r->projs[i].calls[slot]
					     : 0;
	return n;
}

long aw_calls_busy(aw_calls *r, int slot)
{
	pthread_mutex_lock(&r->mu);
	long n = busy(r, slot);
	pthread_mutex_unlock(&r->mu);
	return n;
}

int aw_calls_watched(aw_calls *r)
{
	pthread_mutex_lock(&r->mu);
	int n = r->nprojs;
	pthread_mutex_unlock(&r->mu);
	return n;
}

/* An entry without calls for watch_idle_ms and no reservation open goes
 * (unless a call started meanwhile). */
static void drop(aw_calls *r, const char *project)
{
	pthread_mutex_lock(&r->mu);
	int i = find(r, project);
	if (i >= 0 && !total(&r->projs[i]) &&
	    aw_clock_mono_ns() - r->projs[i].idle_ns >= (int64_t)r->o.watch_idle_ms * 1000000LL) {
		memmove(&r->projs[i], &r->projs[i + 1],
			(size_t)(r->nprojs - i - 1) * sizeof *r->projs);
		r->nprojs--;
	}
	pthread_mutex_unlock(&r->mu);
}

/* ------------------------------------------------------------ doors, kills */

int aw_calls_door(aw_calls *r, const aw_door *d)
{
	pthread_mutex_lock(&r->mu);
	/* a slot whose old door still has calls listed stays out of use (the
	 * cut would run the old door's cancel on them) */
	int slot = 0;
	while (slot < AW_CALLS_DOORS && (r->doors[slot] || busy(r, slot)))
		slot++;
	if (slot < AW_CALLS_DOORS)
		r->doors[slot] = d;
	pthread_mutex_unlock(&r->mu);
	return slot < AW_CALLS_DOORS ? slot : -1;
}

void aw_calls_door_off(aw_calls *r, int slot)
{
	if (slot < 0 || slot >= AW_CALLS_DOORS)
		return;
	pthread_mutex_lock(&r->mu); /* cancels run under it */
	r->doors[slot] = NULL;
	pthread_mutex_unlock(&r->mu);
}

/* Records the suspension seen at seen_ns and cuts every call of project
 * that entered before it, each through its door's cancel. */
static void cut(aw_calls *r, const char *project, int64_t seen_ns)
{
	int n[AW_CALLS_DOORS] = {0};
	const aw_door *d[AW_CALLS_DOORS];
	pthread_mutex_lock(&r->mu);
	memcpy(d, r->doors, sizeof d);
	int i = find(r, project); /* no entry: no call of it here */
	for (aw_call *c = i >= 0 ? r->projs[i].calls_in : NULL; c; c = c->rnext)
		if (c->t0_ns < seen_ns && r->doors[c->slot] && !atomic_exchange(&c->cut, 1)) {
			c->door->cancel(c);
			n[c->slot]++;
		}
	pthread_mutex_unlock(&r->mu);
	for (int s = 0; s < AW_CALLS_DOORS; s++)
		if (n[s]) {
			char count[16];
			snprintf(count, sizeof count, "%d", n[s]);
			aw_log(AW_LOG_WARN, NULL, "calls of a suspended project cut", "project",
			       project, "door", d[s]->name, "count", count, NULL);
		}
}

void aw_calls_kill(aw_calls *r, const char *project)
{
	cut(r, project, aw_clock_mono_ns());
	aw_error err = {0};
	if (r->o.policy && aw_policy_announce_kill(r->o.policy, project, &err))
		aw_log(AW_LOG_WARN, NULL, "suspension not announced on the bus (others poll)",
		       "project", project, "detail", err.msg, NULL);
}

/* The bus thread, under the cache's lock: the watcher looks at once. */
static void on_kill(void *ud, const char *project)
{
	aw_calls *r = ud;
	(void)project;
	pthread_mutex_lock(&r->mu);
	r->check_now = 1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* ------------------------------------------------------------ the watcher */

/* One pass: every project with calls here (with reap: every project
 * watched) is read for a suspension, which cuts; with reap, this
 * process's reservations are renewed, those of dead holders reaped, and a
 * project with no call here and no reservation open forgotten. */
void aw_calls_watch_now(aw_calls *r, int reap)
{
	char(*projects)[AW_PROJECT_MAX + 1] = NULL;
	int *busy = NULL, n = 0, listed;
	pthread_mutex_lock(&r->mu);
	listed = r->nprojs;
	if (listed) {
		projects = aw_malloc((size_t)listed * sizeof *projects);
		busy = aw_malloc((size_t)listed * sizeof *busy);
	}
	for (int i = 0; projects && busy && i < r->nprojs; i++)
		if (total(&r->projs[i]) || reap) {
			busy[n] = total(&r->projs[i]) > 0;
			AW_COPY_ARRAY(projects[n], r->projs[i].project);
			n++;
		}
	pthread_mutex_unlock(&r->mu);
	if (listed && (!projects || !busy)) /* the next pass tries again */
		aw_log(AW_LOG_ERROR, NULL, "call watcher: out of memory", NULL);
	for (int i = 0; i < n; i++) {
		aw_ctx ctx;
		aw_ctx_system(&ctx, projects[i]);
		aw_error err = {0};
		int suspended = 0, reaped = 0;
		long long open = -1;
		/* taken before the read: a call started after it was admitted
		 * after a resume the read may not have seen */
		int64_t seen = aw_clock_mono_ns();
		if (aw_budget_suspended(r->o.store, &ctx, &suspended, &err) == AW_OK && suspended)
			cut(r, projects[i], seen);
		if (reap && busy[i]) /* the heartbeat of this process's reservations */
			aw_budget_renew(r->o.store, &ctx, r->holder, r->o.lease_ms, &err);
		if (reap && aw_budget_reap(r->o.store, &ctx, &reaped, &err) == AW_OK && reaped) {
			char count[16];
			snprintf(count, sizeof count, "%d", reaped);
			aw_metrics_llm_event("reaped", projects[i]);
			aw_log(AW_LOG_WARN, &ctx, "budget reservations of a dead holder reaped",
			       "count", count, NULL);
		}
		if (reap && !busy[i] && aw_budget_open(r->o.store, &ctx, &open, &err) == AW_OK &&
		    !open)
			drop(r, projects[i]);
	}
	free(projects);
	free(busy);
}

static void *watcher_main(void *arg)
{
	aw_calls *r = arg;
	pthread_setname_np(pthread_self(), "aw-call-watch");
	/* background work: calls in flight come first */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	int64_t next_watch = aw_clock_mono_ns(), next_reap = next_watch;
	pthread_mutex_lock(&r->mu);
	while (!r->stop) {
		while (!r->stop && !r->check_now && aw_clock_mono_ns() < next_watch) {
			struct timespec ts = aw_clock_after(CLOCK_MONOTONIC, WATCH_MS);
			pthread_cond_timedwait(&r->cv, &r->mu, &ts);
		}
		if (r->stop)
			break;
		r->check_now = 0;
		pthread_mutex_unlock(&r->mu);
		int64_t now = aw_clock_mono_ns();
		int reap = now >= next_reap;
		aw_calls_watch_now(r, reap);
		if (reap)
			next_reap = now + (int64_t)r->o.lease_ms / 4 * 1000000LL;
		int remote = r->o.policy && aw_policy_kill_remote(r->o.policy);
		next_watch = now + (int64_t)(remote ? r->o.watch_bus_ms : WATCH_MS) * 1000000LL;
		aw_metrics_loop_tick("call_watcher");
		pthread_mutex_lock(&r->mu);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* ------------------------------------------------------------ life */

aw_err aw_calls_new(const aw_calls_opts *o, aw_calls **out, aw_error *err)
{
	*out = NULL;
	if (!o || !o->store)
		return aw_fail(err, AW_E_CONFIG, "the call registry needs a store");
	aw_calls *r = aw_calloc(1, sizeof *r);
	if (!r)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	r->o = *o;
	if (r->o.lease_ms <= 0)
		r->o.lease_ms = 660000;
	if (r->o.watch_idle_ms <= 0)
		r->o.watch_idle_ms = 10 * r->o.lease_ms;
	if (r->o.watch_bus_ms <= 0)
		r->o.watch_bus_ms = WATCH_BUS_MS;
	char host[64] = "host";
	gethostname(host, sizeof host);
	host[sizeof host - 1] = '\0';
	snprintf(r->holder, sizeof r->holder, "%s-%d", host, (int)getpid());
	pthread_mutex_init(&r->mu, NULL);
	aw_clock_cond_init(&r->cv);
	if (pthread_create(&r->th, NULL, watcher_main, r) != 0) {
		aw_calls_free(r);
		return aw_fail(err, AW_E_INTERNAL, "cannot start the call watcher");
	}
	r->started = 1;
	if (r->o.policy && aw_policy_on_kill(r->o.policy, on_kill, r) != 0) {
		aw_calls_free(r);
		return aw_fail(err, AW_E_INTERNAL, "too many kill listeners");
	}
	*out = r;
	return AW_OK;
}

void aw_calls_free(aw_calls *r)
{
	if (!r)
		return;
	if (r->o.policy)
		aw_policy_off_kill(r->o.policy, on_kill, r); /* not running after this */
	if (r->started) {
		pthread_mutex_lock(&r->mu);
		r->stop = 1;
		pthread_cond_broadcast(&r->cv);
		pthread_mutex_unlock(&r->mu);
		pthread_join(r->th, NULL);
	}
	free(r->projs);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

const char *aw_calls_holder(const aw_calls *r)
{
	return r->holder;
}
