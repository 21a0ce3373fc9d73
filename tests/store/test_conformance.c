/*
 * test_conformance.c - the store conformance suite. The same tests run against
 * every backend (argv[1]: sqlite | postgres); a backend passes only if it
 * behaves identically, including tenant scoping, conflicts and timestamps.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "awooop/crypto.h"
#include "awooop/store/audit.h"
#include "awooop/store/contract.h"
#include "awooop/store/run.h"
#include "awooop/store/tenancy.h"
#include "support.h"

#define S (aw_fx.s)

static int setup(void **state)
{
	if (aw_test_store_up(NULL))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	aw_test_store_down();
	return 0;
}

static void make_project(const char *id)
{
	aw_ctx c;
	aw_test_ctx(&c, id, AW_SCOPE_PLATFORM_ADMIN, "tester");
	aw_txn *t = NULL;
	aw_error err = {0};
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_WRITE, &t, &err), AW_OK);
	aw_project p = {0};
	snprintf(p.project_id, sizeof p.project_id, "%s", id);
	aw_clock_now(p.created_at);
	snprintf(p.created_by, sizeof p.created_by, "tester");
	assert_int_equal(aw_store_project_insert(t, &p, &err), AW_OK);
	assert_int_equal(aw_store_commit(t, &err), AW_OK);
}

static void make_key(const char *project, const char *name, aw_scope scope, char *key_id,
		     char *hash)
{
	aw_ctx c;
	aw_test_ctx(&c, project, AW_SCOPE_PLATFORM_ADMIN, "tester");
	aw_apikey k = {0};
	aw_uuid7_str(k.key_id);
	snprintf(k.name, sizeof k.name, "%s", name);
	k.scope = scope;
	uint8_t rnd[16];
	aw_random_bytes(rnd, sizeof rnd);
	aw_sha256_hex(rnd, sizeof rnd, k.key_hash);
	snprintf(k.key_prefix, sizeof k.key_prefix, "awk_test");
	aw_clock_now(k.created_at);
	snprintf(k.created_by, sizeof k.created_by, "tester");
	aw_txn *t = NULL;
	aw_error err = {0};
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_WRITE, &t, &err), AW_OK);
	assert_int_equal(aw_store_key_insert(t, &k, &err), AW_OK);
	assert_int_equal(aw_store_commit(t, &err), AW_OK);
	if (key_id)
		strcpy(key_id, k.key_id);
	if (hash)
		strcpy(hash, k.key_hash);
}

static void test_schema_current_and_migrate_idempotent(void **state)
{
	aw_error err = {0};
	assert_int_equal(aw_store_check_schema(S, &err), AW_OK);
	assert_true(aw_store_schema_target(S) >= 1);
	assert_int_equal(aw_store_ping(S, &err), AW_OK);
	if (!aw_fx.db.pg) /* on postgres the app role may not migrate; see pg_isolation */
		assert_int_equal(aw_store_migrate(S, NULL, &err), AW_OK);
}

static void test_project_insert_get_conflict(void **state)
{
	make_project("conf-p1");
	aw_ctx c;
	aw_test_ctx(&c, "conf-p1", AW_SCOPE_READER, "r");
	aw_txn *t = NULL;
	aw_error err = {0};
	aw_project p;
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_READ, &t, &err), AW_OK);
	assert_int_equal(aw_store_project_get(t, &p, &err), AW_OK);
	aw_store_rollback(t);
	assert_string_equal(p.project_id, "conf-p1");
	assert_string_equal(p.created_by, "tester");
	int64_t ms;
	assert_int_equal(aw_clock_parse(p.created_at, &ms), 0); /* canonical format */
	assert_true(ms > 1700000000000LL);

	/* duplicate */
	aw_test_ctx(&c, "conf-p1", AW_SCOPE_PLATFORM_ADMIN, "tester");
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_WRITE, &t, &err), AW_OK);
	assert_int_equal(aw_store_project_insert(t, &p, &err), AW_E_TENANT_EXISTS);
	aw_store_rollback(t);

	/* missing */
	aw_test_ctx(&c, "conf-missing", AW_SCOPE_READER, "r");
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_READ, &t, &err), AW_OK);
	assert_int_equal(aw_store_project_get(t, &p, &err), AW_E_TENANT_NOT_FOUND);
	aw_store_rollback(t);
}

static void test_project_insert_needs_own_txn(void **state)
{
	aw_ctx c;
	aw_test_ctx(&c, "conf-other", AW_SCOPE_PLATFORM_ADMIN, "tester");
	aw_txn *t = NULL;
	aw_error err = {0};
	aw_project p = {.project_id = "conf-sneaky", .created_by = "x"};
	aw_clock_now(p.created_at);
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_WRITE, &t, &err), AW_OK);
	assert_int_not_equal(aw_store_project_insert(t, &p, &err), AW_OK);
	aw_store_rollback(t);
}

static void test_rollback_discards(void **state)
{
	aw_ctx c;
	aw_test_ctx(&c, "conf-rb", AW_SCOPE_PLATFORM_ADMIN, "tester");
	aw_txn *t = NULL;
	aw_error err = {0};
	aw_project p = {.project_id = "conf-rb", .created_by = "x"};
	aw_clock_now(p.created_at);
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_WRITE, &t, &err), AW_OK);
	assert_int_equal(aw_store_project_insert(t, &p, &err), AW_OK);
	aw_store_rollback(t);
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_READ, &t, &err), AW_OK);
	assert_int_equal(aw_store_project_get(t, &p, &err), AW_E_TENANT_NOT_FOUND);
	aw_store_rollback(t);
}

static void test_keys_lifecycle(void **state)
{
	make_project("conf-k");
	char id1[40], hash1[65];
	make_key("conf-k", "alice", AW_SCOPE_OPERATOR, id1, hash1);
	aw_ctx c;
	aw_test_ctx(&c, "conf-k", AW_SCOPE_PROJECT_ADMIN, "admin");
	aw_txn *t = NULL;
	aw_error err = {0};

	/* a second active key with the same name is refused */
	aw_apikey dup = {0};
	aw_uuid7_str(dup.key_id);
	strcpy(dup.name, "alice");
	dup.scope = AW_SCOPE_READER;
	strcpy(dup.key_hash, "0000000000000000000000000000000000000000000000000000000000000001");
	strcpy(dup.key_prefix, "awk_x");
	aw_clock_now(dup.created_at);
	strcpy(dup.created_by, "admin");
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_WRITE, &t, &err), AW_OK);
	assert_int_equal(aw_store_key_insert(t, &dup, &err), AW_E_KEY_EXISTS);
	aw_store_rollback(t);

	/* revoke, then the name is free again; revoking twice says so */
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_WRITE, &t, &err), AW_OK);
	assert_int_equal(aw_store_key_revoke(t, id1, now, &err), AW_OK);
	assert_int_equal(aw_store_key_revoke(t, id1, now, &err), AW_E_KEY_REVOKED);
	assert_int_equal(aw_store_key_insert(t, &dup, &err), AW_OK);
	assert_int_equal(aw_store_commit(t, &err), AW_OK);

	aw_apikey *list = NULL;
	int n = 0;
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_READ, &t, &err), AW_OK);
	assert_int_equal(aw_store_key_list(t, &list, &n, &err), AW_OK);
	aw_store_rollback(t);
	assert_int_equal(n, 2);
	assert_string_equal(list[0].key_id, id1);
	assert_string_equal(list[0].revoked_at, now);
	assert_int_equal(list[0].scope, AW_SCOPE_OPERATOR);
	assert_string_equal(list[1].revoked_at, "");
	free(list);

	/* lookup by hash across projects, revoked_at visible to the caller */
	aw_apikey k;
	aw_ctx sys;
	aw_ctx_system(&sys, NULL);
	assert_int_equal(aw_store_platform_lookup_key(S, &sys, hash1, &k, &err), AW_OK);
	assert_string_equal(k.project_id, "conf-k");
	assert_string_equal(k.name, "alice");
	assert_string_equal(k.revoked_at, now);
	assert_int_equal(aw_store_platform_lookup_key(
				 S, &sys,
				 "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
				 &k, &err),
			 AW_E_AUTH_INVALID);

	/* unknown key id */
	char other[40];
	aw_uuid7_str(other);
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_WRITE, &t, &err), AW_OK);
	assert_int_equal(aw_store_key_revoke(t, other, now, &err), AW_E_KEY_NOT_FOUND);
	aw_store_rollback(t);
}

static void test_tenant_scoping(void **state)
{
	make_project("conf-ta");
	make_project("conf-tb");
	char ida[40], idb[40];
	make_key("conf-ta", "a1", AW_SCOPE_READER, ida, NULL);
	make_key("conf-tb", "b1", AW_SCOPE_READER, idb, NULL);
	aw_ctx a;
	aw_test_ctx(&a, "conf-ta", AW_SCOPE_PROJECT_ADMIN, "a");
	aw_txn *t = NULL;
	aw_error err = {0};
	aw_apikey *list = NULL;
	int n = 0;
	assert_int_equal(aw_store_begin(S, &a, AW_TXN_READ, &t, &err), AW_OK);
	assert_int_equal(aw_store_key_list(t, &list, &n, &err), AW_OK);
	aw_store_rollback(t);
	assert_int_equal(n, 1);
	assert_string_equal(list[0].key_id, ida);
	free(list);

	/* B's key is not found from A, exactly like a missing one, and stays active */
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	assert_int_equal(aw_store_begin(S, &a, AW_TXN_WRITE, &t, &err), AW_OK);
	assert_int_equal(aw_store_key_revoke(t, idb, now, &err), AW_E_KEY_NOT_FOUND);
	aw_store_rollback(t);
	aw_ctx b;
	aw_test_ctx(&b, "conf-tb", AW_SCOPE_PROJECT_ADMIN, "b");
	assert_int_equal(aw_store_begin(S, &b, AW_TXN_READ, &t, &err), AW_OK);
	assert_int_equal(aw_store_key_list(t, &list, &n, &err), AW_OK);
	aw_store_rollback(t);
	assert_int_equal(n, 1);
	assert_string_equal(list[0].revoked_at, "");
	free(list);

	/* a transaction without a project sees no tenant rows */
	aw_ctx none;
	aw_test_ctx(&none, NULL, AW_SCOPE_PLATFORM_ADMIN, "x");
	assert_int_equal(aw_store_begin(S, &none, AW_TXN_READ, &t, &err), AW_OK);
	assert_int_equal(aw_store_key_list(t, &list, &n, &err), AW_OK);
	aw_store_rollback(t);
	assert_int_equal(n, 0);
	free(list);
}

static void test_platform_list_paginates(void **state)
{
	make_project("conf-l1");
	make_project("conf-l2");
	make_project("conf-l3");
	aw_ctx sys;
	aw_ctx_system(&sys, NULL);
	aw_error err = {0};
	aw_project *p = NULL;
	int n = 0;
	assert_int_equal(aw_store_platform_list_projects(S, &sys, "conf-l0", 2, &p, &n, &err),
			 AW_OK);
	assert_int_equal(n, 2);
	assert_string_equal(p[0].project_id, "conf-l1");
	assert_string_equal(p[1].project_id, "conf-l2");
	free(p);
	assert_int_equal(aw_store_platform_list_projects(S, &sys, "conf-l2", 1, &p, &n, &err),
			 AW_OK);
	assert_int_equal(n, 1);
	assert_string_equal(p[0].project_id, "conf-l3");
	free(p);
}

#define NTHREADS 8
#define PER_THREAD 20

static void *writer(void *arg)
{
	long id = (long)arg;
	for (int i = 0; i < PER_THREAD; i++) {
		char name[32];
		snprintf(name, sizeof name, "w%ld-%d", id, i);
		make_key("conf-conc", name, AW_SCOPE_WORKER, NULL, NULL);
	}
	return NULL;
}

static void test_concurrent_writers(void **state)
{
	make_project("conf-conc");
	pthread_t th[NTHREADS];
	for (long i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, writer, (void *)i);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	aw_ctx c;
	aw_test_ctx(&c, "conf-conc", AW_SCOPE_PROJECT_ADMIN, "a");
	aw_txn *t = NULL;
	aw_error err = {0};
	int n = 0;
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_READ, &t, &err), AW_OK);
	assert_int_equal(aw_store_key_count_scope(t, AW_SCOPE_WORKER, &n, &err), AW_OK);
	aw_store_rollback(t);
	assert_int_equal(n, NTHREADS * PER_THREAD);
}

/* ---- the per-project bound on the pool's connections (issue 39) */

typedef struct {
	aw_store *s;
	const char *project; /* charged to it */
	int nested;	     /* opens a second transaction inside the first */
	pthread_mutex_t *mu;
	pthread_cond_t *cv;
	int *holding, *release;
	aw_err got, nested_got;
} holder;

static void *hold_conn(void *arg)
{
	holder *h = arg;
	aw_ctx c;
	aw_test_ctx(&c, h->project, AW_SCOPE_OPERATOR, "op");
	snprintf(c.charge, sizeof c.charge, "%s", h->project);
	aw_txn *t = NULL, *t2 = NULL;
	aw_error err = {0};
	h->got = aw_store_begin(h->s, &c, AW_TXN_READ, &t, &err);
	if (!h->got && h->nested)
		h->nested_got = aw_store_begin(h->s, &c, AW_TXN_READ, &t2, &err);
	pthread_mutex_lock(h->mu);
	(*h->holding)++;
	pthread_cond_broadcast(h->cv);
	while (!*h->release)
		pthread_cond_wait(h->cv, h->mu);
	pthread_mutex_unlock(h->mu);
	if (t2)
		aw_store_rollback(t2);
	if (t)
		aw_store_rollback(t);
	return NULL;
}

/* A charged transaction of project from this thread: its result and how
 * long it took, in ms. */
static aw_err try_begin(aw_store *s, const char *project, const char *charge, double *ms)
{
	aw_ctx c;
	aw_test_ctx(&c, project, AW_SCOPE_OPERATOR, "op");
	snprintf(c.charge, sizeof c.charge, "%s", charge);
	aw_txn *t = NULL;
	aw_error err = {0};
	int64_t t0 = aw_clock_mono_ns();
	aw_err e = aw_store_begin(s, &c, AW_TXN_READ, &t, &err);
	*ms = (double)(aw_clock_mono_ns() - t0) / 1e6;
	if (t)
		aw_store_rollback(t);
	return e;
}

typedef struct {
	pthread_mutex_t *mu;
	pthread_cond_t *cv;
	int *release;
} releaser;

static void *release_soon(void *arg)
{
	releaser *r = arg;
	struct timespec d = {0, 50 * 1000000};
	nanosleep(&d, NULL);
	pthread_mutex_lock(r->mu);
	*r->release = 1;
	pthread_cond_broadcast(r->cv);
	pthread_mutex_unlock(r->mu);
	return NULL;
}

static void test_project_pool_bound(void **state)
{
	aw_store *s = NULL;
	aw_error err = {0};
	aw_store_opts o = {.pool_size = 8, .project_pool = "2,gamma=3", .project_wait_ms = 300};
	assert_int_equal(aw_store_open(aw_fx.db.url, &o, &s, &err), AW_OK);
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
	int holding = 0, release_a = 0, release_g = 0;
	/* alpha holds its 2 (the second holder nests a transaction: not held
	 * to the bound again, it would wait on itself), gamma its 3 */
	holder hs[5];
	pthread_t th[5];
	for (int i = 0; i < 5; i++) {
		hs[i] = (holder){.s = s,
				 .project = i < 2 ? "alpha" : "gamma",
				 .nested = i == 1,
				 .mu = &mu,
				 .cv = &cv,
				 .holding = &holding,
				 .release = i < 2 ? &release_a : &release_g};
		pthread_create(&th[i], NULL, hold_conn, &hs[i]);
		if (i == 0) { /* alpha's plain holder first: the nested one counts */
			pthread_mutex_lock(&mu);
			while (holding < 1)
				pthread_cond_wait(&cv, &mu);
			pthread_mutex_unlock(&mu);
		}
	}
	pthread_mutex_lock(&mu);
	while (holding < 5)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < 5; i++)
		assert_int_equal(hs[i].got, AW_OK);
	assert_int_equal(hs[1].nested_got, AW_OK);
	int held;
	long bound;
	aw_store_project_held(s, "alpha", &held, &bound);
	assert_int_equal(held, 3); /* the nested one counts, unbounded */
	assert_int_equal(bound, 2);
	aw_store_project_held(s, "gamma", &held, &bound);
	assert_int_equal(held, 3);
	assert_int_equal(bound, 3);

	double ms;
	/* alpha's next waits a moment, then is refused */
	assert_int_equal(try_begin(s, "alpha", "alpha", &ms), AW_E_STORE_PROJECT);
	assert_true(ms >= 290 && ms < 3000);
	assert_int_equal(aw_err_http_status(AW_E_STORE_PROJECT), 429);
	/* gamma's override: 3 held, the fourth refused */
	assert_int_equal(try_begin(s, "gamma", "gamma", &ms), AW_E_STORE_PROJECT);
	/* beta, the platform's own requests and system work pass at once */
	assert_int_equal(try_begin(s, "beta", "beta", &ms), AW_OK);
	assert_true(ms < 1000);
	assert_int_equal(try_begin(s, "alpha", AW_PLATFORM_PROJECT, &ms), AW_OK);
	assert_int_equal(try_begin(s, "alpha", "", &ms), AW_OK); /* a recorder's */
	/* a connection of alpha's coming back lets its waiter through */
	releaser rl = {&mu, &cv, &release_a};
	pthread_t rt;
	pthread_create(&rt, NULL, release_soon, &rl);
	/* (the holders' transactions end 50 ms into its wait of 300) */
	assert_int_equal(try_begin(s, "alpha", "alpha", &ms), AW_OK);
	assert_true(ms >= 20);
	pthread_join(rt, NULL);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	pthread_mutex_lock(&mu);
	release_g = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (int i = 2; i < 5; i++)
		pthread_join(th[i], NULL);
	aw_store_project_held(s, "alpha", &held, &bound);
	assert_int_equal(held, 0);
	aw_store_project_held(s, "gamma", &held, &bound);
	assert_int_equal(held, 0);
	aw_store_close(s);

	/* the default: half the pool, at least one */
	aw_store_opts d = {.pool_size = 3};
	assert_int_equal(aw_store_open(aw_fx.db.url, &d, &s, &err), AW_OK);
	aw_store_project_held(s, "alpha", &held, &bound);
	assert_int_equal(bound, 1);
	aw_store_close(s);
	d.pool_size = 8;
	assert_int_equal(aw_store_open(aw_fx.db.url, &d, &s, &err), AW_OK);
	aw_store_project_held(s, "alpha", &held, &bound);
	assert_int_equal(bound, 4);
	aw_store_close(s);
	aw_store_opts bad = {.pool_size = 8, .project_pool = "2,Alpha=x"};
	s = NULL;
	assert_int_equal(aw_store_open(aw_fx.db.url, &bad, &s, &err), AW_E_CONFIG);
	assert_non_null(strstr(err.msg, "--project-pool"));
	assert_null(s);
}

static void test_bad_url(void **state)
{
	aw_store *s = NULL;
	aw_error err = {0};
	assert_int_equal(aw_store_open("mysql://x", NULL, &s, &err), AW_E_CONFIG);
	assert_int_equal(aw_store_open("sqlite:", NULL, &s, &err), AW_E_CONFIG);
	assert_int_equal(aw_store_open("sqlite:/nonexistent-dir/x/y.db", NULL, &s, &err),
			 AW_E_STORE_UNAVAILABLE);
	assert_null(s);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schema_current_and_migrate_idempotent),
		cmocka_unit_test(test_project_insert_get_conflict),
		cmocka_unit_test(test_project_insert_needs_own_txn),
		cmocka_unit_test(test_rollback_discards),
		cmocka_unit_test(test_keys_lifecycle),
		cmocka_unit_test(test_tenant_scoping),
		cmocka_unit_test(test_platform_list_paginates),
		cmocka_unit_test(test_concurrent_writers),
		cmocka_unit_test(test_project_pool_bound),
		cmocka_unit_test(test_bad_url),
	};
	return AW_TEST_MAIN("store conformance", tests, setup, teardown);
}
