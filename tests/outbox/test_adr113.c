/*
 * test_adr113.c - ADR-113 end to end on a real store (argv[1]: sqlite |
 * postgres) and a real Redis the test starts and kills itself:
 *  - relay delivers an activation to the bus; the cache hears it (source bus);
 *  - a relay crash between publish and mark-delivered redelivers, and the
 *    consumer stays correct (no second announcement, same revision);
 *  - Redis killed: the fallback checker converges the cache; after Redis comes
 *    back, the resync catches what the dead bus missed;
 *  - bounded mode reads the store about once per max_staleness, strict mode
 *    once per call; the guard never returns a revision it knows is stale;
 *  - D5: a __platform__ ollama_topology activation calls platform listeners;
 *  - the fleet's probe: a process behind the store shows its lag, converged
 *    after the relay delivers.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "awooop/contract.h"
#include "awooop/fleet.h"
#include "awooop/metrics.h"
#include "awooop/policy.h"
#include "awooop/relay.h"
#include "awooop/tenancy.h"
#include "core/clock_hook.h"
#include "outbox/relay_hooks.h"
#include "support.h"

#define KEYS "k1:1111111111111111111111111111111111111111111111111111111111111111"

#define S (aw_fx.s)
static aw_keyring *KR;
static aw_contracts *C;

static aw_test_redis R;
#define redis_url R.url
#define redis_start() aw_test_redis_start(&R)
#define redis_kill() aw_test_redis_kill(&R)

static int setup(void **state)
{
	const char *const projects[] = {"adr", NULL};
	if (aw_test_store_up(projects))
		return -1;
	aw_error err = {0};
	if (aw_keyring_from_env(KEYS, &KR, &err) || aw_contracts_new(KR, &C, &err))
		return -1;
	char ignore[AW_KEY_SECRET_LEN + 1];
	if (aw_tenancy_bootstrap(S, NULL, ignore, &err))
		return -1;
	aw_test_redis_init(&R);
	return 0;
}

static int teardown(void **state)
{
	aw_test_redis_cleanup(&R);
	aw_contracts_free(C);
	aw_keyring_free(KR);
	aw_test_store_down();
	return 0;
}

/* A published and approved revision; returns its id. */
static void ready_revision(const char *project, const char *family, const char *cid, json_t *body,
			   char *rev)
{
	aw_ctx pub, appr;
	aw_test_ctx(&pub, project, AW_SCOPE_OPERATOR, "publisher");
	aw_test_ctx(&appr, project, AW_SCOPE_OPERATOR, "approver");
	aw_error err = {0};
	aw_revision r = {0};
	aw_err e = aw_contract_create(C, S, &pub, family, cid, body, &r, &err);
	if (e)
		fail_msg("create: %s", err.msg);
	strcpy(rev, r.revision_id);
	aw_revision_clear(&r);
	assert_int_equal(aw_contract_publish(C, S, &pub, family, cid, rev, NULL, &err), AW_OK);
	assert_int_equal(aw_contract_approve(C, S, &appr, family, cid, rev, NULL, &err), AW_OK);
	json_decref(body);
}

static void activate(const char *project, const char *family, const char *cid, const char *rev)
{
	aw_ctx op;
	aw_test_ctx(&op, project, AW_SCOPE_OPERATOR, "operator");
	aw_error err = {0};
	aw_activation act;
	aw_err e = aw_contract_activate(C, S, &op, family, cid, rev, &act, &err);
	if (e || !act.activated)
		fail_msg("activate: %s %s", aw_err_code(e), err.msg);
}

static json_t *routing(int n)
{
	char model[32];
	snprintf(model, sizeof model, "model-%d", n);
	return json_pack("{s:[{s:s, s:{s:s}, s:[{s:s, s:s}]}]}", "routes", "name", "main", "match",
			 "task", "chat", "candidates", "provider", "ollama", "model", model);
}

/* ---- what a cache announced */
typedef struct {
	pthread_mutex_t mu;
	char rev[64][40], src[64][16];
	int n;
} seen_t;

static void on_change(void *ud, const char *project, const char *family, const char *cid,
		      const char *rev, const char *source)
{
	seen_t *s = ud;
	(void)project, (void)family, (void)cid;
	pthread_mutex_lock(&s->mu);
	if (s->n < 64) {
		snprintf(s->rev[s->n], sizeof s->rev[0], "%s", rev);
		snprintf(s->src[s->n], sizeof s->src[0], "%s", source);
		s->n++;
	}
	pthread_mutex_unlock(&s->mu);
}

/* Waits up to ms for the cache to announce rev; returns the source or NULL. */
static const char *wait_for(seen_t *s, const char *rev, int ms)
{
	for (int t = 0; t <= ms; t += 10) {
		pthread_mutex_lock(&s->mu);
		for (int i = s->n - 1; i >= 0; i--) {
			if (!strcmp(s->rev[i], rev)) {
				const char *src = s->src[i];
				pthread_mutex_unlock(&s->mu);
				return src;
			}
		}
		pthread_mutex_unlock(&s->mu);
		usleep(10000);
	}
	return NULL;
}

/* Conditions for aw_test_wait_until: the bus subscription ud is up; the
 * cache ud finished the resync of its first connect; the outbox has nothing
 * undelivered. */
static int bus_up(void *ud)
{
	return aw_bus_connected(ud);
}

static int resynced(void *ud)
{
	aw_policy_stats ps;
	aw_policy_get_stats(ud, &ps);
	return ps.resyncs >= 1 && ps.fallback_checks >= 1;
}

static int outbox_empty(void *ud)
{
	(void)ud;
	int64_t undelivered = -1;
	char oldest[32];
	aw_error err = {0};
	return aw_store_relay_stats(S, &undelivered, oldest, &err) == AW_OK && undelivered == 0;
}

static void call(aw_policy_cache *pc, const char *cid, char *rev_out)
{
	aw_ctx c;
	aw_test_ctx(&c, "adr", AW_SCOPE_WORKER, "worker");
	aw_policy pol;
	aw_error err = {0};
	aw_err e = aw_policy_effective(pc, &c, "policy_routing", cid, &pol, &err);
	if (e)
		fail_msg("effective: %s %s", aw_err_code(e), err.msg);
	strcpy(rev_out, pol.revision_id);
	assert_non_null(json_object_get(pol.body, "routes"));
	aw_policy_release(&pol);
}

static void test_relay_delivers_to_cache(void **state)
{
	redis_start();
	aw_bus *pub = NULL, *sub = NULL;
	aw_error err = {0};
	assert_int_equal(aw_bus_open(redis_url, &pub, &err), AW_OK);
	assert_int_equal(aw_bus_open(redis_url, &sub, &err), AW_OK);
	aw_policy_opts po = {
		.mode = AW_GUARD_BOUNDED, .max_staleness_ms = 60000, .interval_ms = 60000};
	aw_policy_cache *pc = NULL;
	assert_int_equal(aw_policy_cache_new(S, C, sub, &po, &pc, &err), AW_OK);
	seen_t seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
	aw_policy_on_change(pc, on_change, &seen);
	char r1[40], r2[40], got[40];
	ready_revision("adr", "policy_routing", "deliver", routing(1), r1);
	ready_revision("adr", "policy_routing", "deliver", routing(2), r2);
	activate("adr", "policy_routing", "deliver", r1);
	int delivered = 0;
	assert_int_equal(aw_relay_round(S, pub, 100, &delivered, &err), AW_OK);
	call(pc, "deliver", got);
	assert_string_equal(got, r1);
	assert_true(aw_test_wait_until(bus_up, sub, 5000));
	/* the subscription's first connect triggers a resync; let the checker
	 * finish it, or it may find r2 before the bus message does ("resync"):
	 * at most 2 s, not asserted (a checker may not have run by then) */
	(void)aw_test_wait_until(resynced, pc, 2000);
	activate("adr", "policy_routing", "deliver", r2);
	assert_int_equal(aw_relay_round(S, pub, 100, &delivered, &err), AW_OK);
	assert_int_equal(delivered, 1);
	const char *src = wait_for(&seen, r2, 2000);
	assert_non_null(src);
	assert_string_equal(src, "bus");
	call(pc, "deliver", got); /* the next call loads the new revision */
	assert_string_equal(got, r2);

	/* relay crash between publish and mark: redelivered, consumer unaffected */
	char r3[40];
	ready_revision("adr", "policy_routing", "deliver", routing(3), r3);
	activate("adr", "policy_routing", "deliver", r3);
	aw_relay_fault_hook = (int (*)(const char *))(void *)abs; /* abs(ptr) != 0: crash */
	assert_int_not_equal(aw_relay_round(S, pub, 100, &delivered, &err), AW_OK);
	aw_relay_fault_hook = NULL;
	assert_non_null(wait_for(&seen, r3, 2000)); /* it was published once */
	pthread_mutex_lock(&seen.mu);
	int before = seen.n;
	pthread_mutex_unlock(&seen.mu);
	assert_int_equal(aw_relay_round(S, pub, 100, &delivered, &err), AW_OK);
	assert_int_equal(delivered, 1); /* published again: at least once */
	usleep(300000);
	pthread_mutex_lock(&seen.mu);
	assert_int_equal(seen.n, before); /* idempotent: no second announcement */
	pthread_mutex_unlock(&seen.mu);
	call(pc, "deliver", got);
	assert_string_equal(got, r3);
	assert_int_equal(aw_relay_round(S, pub, 100, &delivered, &err), AW_OK);
	assert_int_equal(delivered, 0); /* nothing left */

	aw_policy_cache_free(pc);
	aw_bus_close(sub);
	aw_bus_close(pub);
	redis_kill();
}

static void test_redis_killed_fallback_and_resync(void **state)
{
	redis_start();
	aw_bus *pub = NULL, *sub = NULL;
	aw_error err = {0};
	assert_int_equal(aw_bus_open(redis_url, &pub, &err), AW_OK);
	assert_int_equal(aw_bus_open(redis_url, &sub, &err), AW_OK);
	/* fallback every 300 ms; a huge staleness so only bus/fallback/resync act */
	aw_policy_opts po = {.mode = AW_GUARD_BOUNDED,
			     .max_staleness_ms = 600000,
			     .interval_ms = 300,
			     .jitter_pct = 10};
	aw_policy_cache *pc = NULL;
	assert_int_equal(aw_policy_cache_new(S, C, sub, &po, &pc, &err), AW_OK);
	seen_t seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
	aw_policy_on_change(pc, on_change, &seen);
	char r1[40], r2[40], got[40];
	ready_revision("adr", "policy_routing", "kill", routing(10), r1);
	ready_revision("adr", "policy_routing", "kill", routing(11), r2);
	activate("adr", "policy_routing", "kill", r1);
	call(pc, "kill", got);
	assert_string_equal(got, r1);
	redis_kill();
	activate("adr", "policy_routing", "kill", r2);
	int delivered = 0;
	assert_int_equal(aw_relay_round(S, pub, 100, &delivered, &err), AW_E_BUS_UNAVAILABLE);
	const char *src = wait_for(&seen, r2, 3000); /* interval + jitter, loaded machine */
	assert_non_null(src);
	assert_string_equal(src, "fallback");
	aw_policy_cache_free(pc);

	/* resync: a cache whose fallback is far away learns on reconnect */
	aw_policy_opts slow = {
		.mode = AW_GUARD_BOUNDED, .max_staleness_ms = 600000, .interval_ms = 600000};
	assert_int_equal(aw_policy_cache_new(S, C, sub, &slow, &pc, &err), AW_OK);
	seen_t seen2 = {.mu = PTHREAD_MUTEX_INITIALIZER};
	aw_policy_on_change(pc, on_change, &seen2);
	call(pc, "kill", got);
	assert_string_equal(got, r2);
	char r3[40];
	ready_revision("adr", "policy_routing", "kill", routing(12), r3);
	activate("adr", "policy_routing", "kill", r3); /* the bus is down: missed */
	usleep(300000);
	assert_null(wait_for(&seen2, r3, 0));
	redis_start(); /* the subscriber reconnects and resyncs */
	src = wait_for(&seen2, r3, 5000);
	assert_non_null(src);
	assert_string_equal(src, "resync");
	/* and the relay delivers what was pending once Redis is back */
	assert_int_equal(aw_relay_round(S, pub, 100, &delivered, &err), AW_OK);
	assert_int_equal(delivered, 3); /* r1, r2 and r3: none lost */
	aw_policy_cache_free(pc);
	aw_bus_close(sub);
	aw_bus_close(pub);
	redis_kill();
}

static void test_guard_modes_and_read_budget(void **state)
{
	aw_error err = {0};
	char r1[40], r2[40], got[40];
	ready_revision("adr", "policy_routing", "guard", routing(20), r1);
	ready_revision("adr", "policy_routing", "guard", routing(21), r2);
	activate("adr", "policy_routing", "guard", r1);
	/* bounded, no bus: ~one store read per max_staleness */
	aw_policy_opts po = {
		.mode = AW_GUARD_BOUNDED, .max_staleness_ms = 200, .interval_ms = 600000};
	aw_policy_cache *pc = NULL;
	assert_int_equal(aw_policy_cache_new(S, C, NULL, &po, &pc, &err), AW_OK);
	int64_t t0 = aw_clock_mono_ns();
	int calls = 0;
	while (aw_clock_mono_ns() - t0 < 1000000000LL) { /* 1 s of calls */
		call(pc, "guard", got);
		calls++;
	}
	aw_policy_stats st;
	aw_policy_get_stats(pc, &st);
	/* 1 s / 200 ms = 5 snapshot reads + 1 load; allow scheduling slack */
	if (st.store_reads > 10)
		fail_msg("bounded mode: %llu store reads for %d calls",
			 (unsigned long long)st.store_reads, calls);
	assert_true(calls > 200);
	/* a commit is seen within max_staleness, never later */
	activate("adr", "policy_routing", "guard", r2);
	int64_t committed = aw_clock_mono_ns();
	do {
		call(pc, "guard", got);
	} while (strcmp(got, r2) != 0 && aw_clock_mono_ns() - committed < 2000000000LL);
	assert_string_equal(got, r2);
	/* max_staleness (200 ms) plus room for one store read on a loaded machine */
	assert_true(aw_clock_mono_ns() - committed <= 200000000LL + 300000000LL);
	aw_policy_cache_free(pc);

	/* strict: one read per call, and the very next call after a commit sees it */
	aw_policy_opts so = {.mode = AW_GUARD_STRICT, .interval_ms = 600000};
	assert_int_equal(aw_policy_cache_new(S, C, NULL, &so, &pc, &err), AW_OK);
	for (int i = 0; i < 50; i++)
		call(pc, "guard", got);
	aw_policy_get_stats(pc, &st);
	assert_true(st.store_reads >= 50);
	char r3[40];
	ready_revision("adr", "policy_routing", "guard", routing(22), r3);
	activate("adr", "policy_routing", "guard", r3);
	call(pc, "guard", got);
	assert_string_equal(got, r3);
	/* revoked: fail closed */
	aw_ctx admin;
	aw_test_ctx(&admin, "adr", AW_SCOPE_PROJECT_ADMIN, "admin");
	assert_int_equal(aw_contract_revoke(C, S, &admin, "policy_routing", "guard", r3, &err),
			 AW_OK);
	aw_ctx w;
	aw_test_ctx(&w, "adr", AW_SCOPE_WORKER, "worker");
	aw_policy pol;
	assert_int_equal(aw_policy_effective(pc, &w, "policy_routing", "guard", &pol, &err),
			 AW_E_CONTRACT_NOT_FOUND);
	aw_policy_cache_free(pc);
}

/* A host that booted 5 s ago: the monotonic clock reads ~5 s, below the
 * staleness bound. The first guarded call must still read the store (a
 * "never refreshed" 0 sentinel looked fresh here and failed every call), and
 * a later activation must still be seen within the bound. */
static void test_fresh_boot_clock(void **state)
{
	aw_error err = {0};
	char r1[40], r2[40], got[40];
	ready_revision("adr", "policy_routing", "boot", routing(30), r1);
	ready_revision("adr", "policy_routing", "boot", routing(31), r2);
	activate("adr", "policy_routing", "boot", r1);
	clock_test_shift_mono(0);
	clock_test_shift_mono(5000000000LL - aw_clock_mono_ns());
	assert_true(aw_clock_mono_ns() < 6000000000LL);
	aw_policy_opts po = {
		.mode = AW_GUARD_BOUNDED, .max_staleness_ms = 60000, .interval_ms = 600000};
	aw_policy_cache *pc = NULL;
	assert_int_equal(aw_policy_cache_new(S, C, NULL, &po, &pc, &err), AW_OK);
	call(pc, "boot", got);
	assert_string_equal(got, r1);
	aw_policy_cache_free(pc);
	/* a short bound on the same young clock still converges on a new revision */
	aw_policy_opts shortb = {
		.mode = AW_GUARD_BOUNDED, .max_staleness_ms = 100, .interval_ms = 600000};
	assert_int_equal(aw_policy_cache_new(S, C, NULL, &shortb, &pc, &err), AW_OK);
	call(pc, "boot", got);
	activate("adr", "policy_routing", "boot", r2);
	usleep(150000);
	call(pc, "boot", got);
	assert_string_equal(got, r2);
	aw_policy_cache_free(pc);
	clock_test_shift_mono(0);
}

static int platform_calls;
static char platform_rev[40];
static void on_platform(void *ud, const char *project, const char *family, const char *cid,
			const char *rev, const char *source)
{
	(void)ud, (void)project, (void)family, (void)cid, (void)source;
	__atomic_add_fetch(&platform_calls, 1, __ATOMIC_SEQ_CST);
	snprintf(platform_rev, sizeof platform_rev, "%s", rev);
}

static void test_platform_resource_listeners(void **state)
{
	aw_bus *bus = NULL;
	aw_error err = {0};
	assert_int_equal(aw_bus_open("local", &bus, &err), AW_OK);
	aw_policy_cache *pc = NULL;
	assert_int_equal(aw_policy_cache_new(S, C, bus, NULL, &pc, &err), AW_OK);
	aw_policy_on_platform_change(pc, on_platform, NULL);
	char rev[40];
	json_t *topo = json_loads(
		"{\"kind\":\"ollama_topology\",\"primary\":{\"url\":\"http://10.0.0.5:11434\"}}", 0,
		NULL);
	ready_revision(AW_PLATFORM_PROJECT, "platform_resource", AW_TOPOLOGY_CONTRACT, topo, rev);
	activate(AW_PLATFORM_PROJECT, "platform_resource", AW_TOPOLOGY_CONTRACT, rev);
	int delivered = 0;
	assert_int_equal(aw_relay_round(S, bus, 100, &delivered, &err), AW_OK);
	assert_true(delivered >= 1);
	assert_int_equal(platform_calls, 1);
	assert_string_equal(platform_rev, rev);
	aw_policy_cache_free(pc);
	aw_bus_close(bus);
}

static void test_relay_thread_wakes_on_activation(void **state)
{
	/* with a 60 s poll, delivery within a second proves the wake-up path */
	aw_bus *bus = NULL;
	aw_error err = {0};
	assert_int_equal(aw_bus_open("local", &bus, &err), AW_OK);
	aw_policy_cache *pc = NULL;
	aw_policy_opts po = {.max_staleness_ms = 600000, .interval_ms = 600000};
	assert_int_equal(aw_policy_cache_new(S, C, bus, &po, &pc, &err), AW_OK);
	seen_t seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
	aw_policy_on_change(pc, on_change, &seen);
	char r1[40], r2[40], got[40];
	ready_revision("adr", "policy_routing", "wake", routing(30), r1);
	ready_revision("adr", "policy_routing", "wake", routing(31), r2);
	activate("adr", "policy_routing", "wake", r1);
	aw_relay_opts ro = {.poll_ms = 60000};
	aw_relay *relay = NULL;
	assert_int_equal(aw_relay_start(S, bus, &ro, &relay, &err), AW_OK);
	/* its first round delivers r1's event: then it waits a minute */
	assert_true(aw_test_wait_until(outbox_empty, NULL, 2000));
	call(pc, "wake", got);
	activate("adr", "policy_routing", "wake", r2);
	const char *src = wait_for(&seen, r2, 1000);
	assert_non_null(src);
	assert_string_equal(src, "bus");
	aw_relay_stop(relay);
	int64_t undelivered = -1;
	char oldest[32];
	assert_int_equal(aw_store_relay_stats(S, &undelivered, oldest, &err), AW_OK);
	assert_int_equal(undelivered, 0);
	aw_policy_cache_free(pc);
	aw_bus_close(bus);
}

/* ---- several relays at once */
static int delivered_msgs;
static pthread_mutex_t count_mu = PTHREAD_MUTEX_INITIALIZER;
static char seen_events[64][40];

static void count_msg(void *ud, const char *channel, const char *payload, size_t len)
{
	(void)ud, (void)channel;
	json_t *m = json_loadb(payload, len, 0, NULL);
	const char *id = json_string_value(json_object_get(m, "event_id"));
	pthread_mutex_lock(&count_mu);
	for (int i = 0; id && i < delivered_msgs; i++)
		if (!strcmp(seen_events[i], id))
			fail_msg("event %s delivered twice", id);
	if (id && delivered_msgs < 64)
		snprintf(seen_events[delivered_msgs], sizeof seen_events[0], "%s", id);
	delivered_msgs++;
	pthread_mutex_unlock(&count_mu);
	json_decref(m);
}

static aw_bus *shared_bus;
static void *relay_worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 200; i++) {
		int d = 0;
		aw_error err = {0};
		aw_err e = aw_relay_round(S, shared_bus, 3, &d, &err);
		if (e && e != AW_E_STORE_BUSY)
			return (void *)(long)e;
		if (!e && d == 0)
			break;
	}
	return NULL;
}

static void test_concurrent_relays_and_prune(void **state)
{
	aw_error err = {0};
	int d = 0;
	assert_int_equal(aw_bus_open("local", &shared_bus, &err), AW_OK);
	assert_int_equal(aw_relay_round(S, shared_bus, 1000, &d, &err), AW_OK); /* drain */
	assert_int_equal(aw_bus_subscribe(shared_bus, "platform:contract:invalidate:*", count_msg,
					  NULL, NULL, &err),
			 AW_OK);
	char rev[40];
	for (int i = 0; i < 30; i++) {
		ready_revision("adr", "policy_routing", "many", routing(100 + i), rev);
		activate("adr", "policy_routing", "many", rev);
	}
	pthread_t th[4];
	for (long i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, relay_worker, (void *)i);
	for (int i = 0; i < 4; i++) {
		void *rc;
		pthread_join(th[i], &rc);
		assert_null(rc);
	}
	assert_int_equal(delivered_msgs, 30); /* each event exactly once */
	int64_t undelivered = -1;
	char oldest[32];
	assert_int_equal(aw_store_relay_stats(S, &undelivered, oldest, &err), AW_OK);
	assert_int_equal(undelivered, 0);
	/* delivered rows older than the retention are pruned, pending ones never */
	ready_revision("adr", "policy_routing", "many", routing(200), rev);
	activate("adr", "policy_routing", "many", rev); /* stays pending */
	char before[AW_TS_LEN + 1];
	aw_clock_format(aw_clock_wall_ms() + 5000, before);
	int64_t pruned = 0;
	assert_int_equal(aw_store_relay_prune(S, before, &pruned, &err), AW_OK);
	assert_true(pruned >= 30);
	assert_int_equal(aw_store_relay_stats(S, &undelivered, oldest, &err), AW_OK);
	assert_int_equal(undelivered, 1);
	aw_bus_close(shared_bus);
}

/* The lag of (adr, policy_routing) in /metrics, or -1 when absent. */
static double lag_metric(void)
{
	char *m = aw_metrics_render();
	assert_non_null(m);
	const char *k =
		"awooop_policy_convergence_lag_seconds{project=\"adr\",family=\"policy_routing\"} ";
	const char *p = strstr(m, k);
	double v = p ? strtod(p + strlen(k), NULL) : -1;
	free(m);
	return v;
}

/* The direct signal of a process not converged (issue 47): the fleet's
 * probe compares what the process serves with the store. Converged: 0. An
 * activation the relay has not delivered (no fallback, no guard refresh in
 * this cache): the lag is the time since its activation. Delivered: 0 again.
 * A revocation not delivered: its lag counts from the probe that first saw
 * it; delivered: 0. */
static void test_fleet_convergence_lag(void **state)
{
	redis_start();
	aw_bus *pub = NULL, *sub = NULL;
	aw_error err = {0};
	assert_int_equal(aw_bus_open(redis_url, &pub, &err), AW_OK);
	assert_int_equal(aw_bus_open(redis_url, &sub, &err), AW_OK);
	aw_policy_opts po = {
		.mode = AW_GUARD_BOUNDED, .max_staleness_ms = 600000, .interval_ms = 600000};
	aw_policy_cache *pc = NULL;
	assert_int_equal(aw_policy_cache_new(S, C, sub, &po, &pc, &err), AW_OK);
	aw_fleet *fl = NULL;
	aw_fleet_opts fo = {.store = S, .policy = pc, .role = "test", .report_ms = 600000};
	assert_int_equal(aw_fleet_start(&fo, &fl, &err), AW_OK);
	seen_t seen = {.mu = PTHREAD_MUTEX_INITIALIZER}; /* hears after the fleet */
	aw_policy_on_change(pc, on_change, &seen);
	char r1[40], r2[40], got[40];
	ready_revision("adr", "policy_routing", "lag", routing(300), r1);
	ready_revision("adr", "policy_routing", "lag", routing(301), r2);
	activate("adr", "policy_routing", "lag", r1);
	int delivered = 0;
	assert_int_equal(aw_relay_round(S, pub, 1000, &delivered, &err), AW_OK);
	call(pc, "lag", got);
	assert_string_equal(got, r1);
	assert_true(aw_test_wait_until(bus_up, sub, 5000));
	(void)aw_test_wait_until(resynced, pc, 2000); /* (see above) */
	double worst = -1;
	assert_int_equal(aw_fleet_probe(fl, &worst, &err), AW_OK);
	assert_true(worst == 0);
	assert_true(lag_metric() == 0);

	activate("adr", "policy_routing", "lag", r2); /* not delivered yet */
	usleep(1200000);
	assert_int_equal(aw_fleet_probe(fl, &worst, &err), AW_OK);
	assert_true(worst >= 1.2 && worst < 30);
	assert_true(lag_metric() >= 1.2);
	assert_int_equal(aw_relay_round(S, pub, 1000, &delivered, &err), AW_OK);
	assert_non_null(wait_for(&seen, r2, 3000));
	assert_int_equal(aw_fleet_probe(fl, &worst, &err), AW_OK);
	assert_true(worst == 0);
	assert_true(lag_metric() == 0);

	aw_ctx op;
	aw_test_ctx(&op, "adr", AW_SCOPE_OPERATOR, "operator");
	assert_int_equal(aw_contract_revoke(C, S, &op, "policy_routing", "lag", r2, &err), AW_OK);
	assert_int_equal(aw_fleet_probe(fl, &worst, &err), AW_OK); /* first seen */
	usleep(300000);
	assert_int_equal(aw_fleet_probe(fl, &worst, &err), AW_OK);
	assert_true(worst >= 0.3 && worst < 30);
	assert_int_equal(aw_relay_round(S, pub, 1000, &delivered, &err), AW_OK);
	assert_non_null(wait_for(&seen, "", 3000));
	assert_int_equal(aw_fleet_probe(fl, &worst, &err), AW_OK);
	assert_true(worst == 0);
	assert_true(lag_metric() == 0);

	aw_fleet_stop(fl);
	aw_policy_cache_free(pc);
	aw_bus_close(sub);
	aw_bus_close(pub);
	redis_kill();
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_relay_delivers_to_cache),
		cmocka_unit_test(test_redis_killed_fallback_and_resync),
		cmocka_unit_test(test_guard_modes_and_read_budget),
		cmocka_unit_test(test_fresh_boot_clock),
		cmocka_unit_test(test_platform_resource_listeners),
		cmocka_unit_test(test_relay_thread_wakes_on_activation),
		cmocka_unit_test(test_concurrent_relays_and_prune),
		cmocka_unit_test(test_fleet_convergence_lag),
	};
	return AW_TEST_MAIN("adr-113", tests, setup, teardown);
}
