/*
 * test_tenancy.c - the tenancy service on a real store (argv[1]: sqlite |
 * postgres): bootstrap, authentication, authorisation, scope escalation,
 * project and key lifecycle.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "awooop/tenancy.h"
#include "support.h"

#define S (aw_fx.s)
static char admin_secret[AW_KEY_SECRET_LEN + 1];

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

static void auth_ok(const char *secret, aw_ctx *out)
{
	aw_error err = {0};
	aw_ctx_system(out, NULL);
	assert_int_equal(aw_tenancy_authenticate(S, secret, out, &err), AW_OK);
}

static void test_bootstrap_once(void **state)
{
	aw_error err = {0};
	assert_int_equal(aw_tenancy_bootstrap(S, NULL, admin_secret, &err), AW_OK);
	assert_int_equal(strlen(admin_secret), AW_KEY_SECRET_LEN);
	assert_memory_equal(admin_secret, "awk_", 4);
	char again[AW_KEY_SECRET_LEN + 1];
	assert_int_equal(aw_tenancy_bootstrap(S, NULL, again, &err), AW_OK);
	assert_string_equal(again, ""); /* nothing new printed on restart */
	aw_ctx c;
	auth_ok(admin_secret, &c);
	assert_string_equal(c.project, AW_PLATFORM_PROJECT);
	assert_int_equal(c.scope, AW_SCOPE_PLATFORM_ADMIN);
	assert_string_equal(c.principal, "bootstrap");
}

static void test_bootstrap_env_key_installs_and_rotates(void **state)
{
	aw_error err = {0};
	char printed[AW_KEY_SECRET_LEN + 1];
	const char *k1 = "awk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
	const char *k2 = "awk_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB";
	assert_int_equal(aw_tenancy_bootstrap(S, "short", printed, &err), AW_E_CONFIG);
	assert_int_equal(aw_tenancy_bootstrap(S, k1, printed, &err), AW_OK);
	assert_string_equal(printed, "");
	aw_ctx c;
	auth_ok(k1, &c);
	assert_int_equal(c.scope, AW_SCOPE_PLATFORM_ADMIN);
	assert_int_equal(aw_tenancy_bootstrap(S, k1, printed, &err), AW_OK); /* idempotent */
	assert_int_equal(aw_tenancy_bootstrap(S, k2, printed, &err), AW_OK);
	auth_ok(k2, &c);
	/* the older bootstrap keys are revoked by the rotation */
	aw_ctx_system(&c, NULL);
	assert_int_equal(aw_tenancy_authenticate(S, k1, &c, &err), AW_E_AUTH_INVALID);
	assert_int_equal(aw_tenancy_authenticate(S, admin_secret, &c, &err), AW_E_AUTH_INVALID);
	memcpy(admin_secret, k2, sizeof admin_secret);
}

#include <pthread.h>

static const char *race_key = "awk_RRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRR";
static void *bootstrapper(void *arg)
{
	aw_error err = {0};
	char printed[AW_KEY_SECRET_LEN + 1];
	return (void *)(long)aw_tenancy_bootstrap(S, arg ? race_key : NULL, printed, &err);
}

static void test_concurrent_bootstrap(void **state)
{
	/* several processes of a cluster start at once: all must succeed */
	aw_test_db fresh;
	aw_store *saved = S;
	aw_test_db_create(aw_fx.backend, &fresh);
	S = aw_test_store_open(&fresh);
	for (int with_env = 0; with_env < 2; with_env++) {
		pthread_t th[6];
		for (int i = 0; i < 6; i++)
			pthread_create(&th[i], NULL, bootstrapper, with_env ? (void *)1 : NULL);
		for (int i = 0; i < 6; i++) {
			void *rc;
			pthread_join(th[i], &rc);
			assert_int_equal((long)rc, AW_OK);
		}
	}
	aw_ctx c;
	auth_ok(race_key, &c);
	assert_int_equal(c.scope, AW_SCOPE_PLATFORM_ADMIN);
	aw_store_close(S);
	aw_test_db_drop(&fresh);
	S = saved;
}

static void test_authenticate_rejects(void **state)
{
	aw_error err = {0};
	aw_ctx c;
	aw_ctx_system(&c, NULL);
	const char *bad[] = {"",
			     "awk_",
			     "Bearer x",
			     "awk_CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC",
			     "awk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'",
			     "awk_' OR '1'='1' --AAAAAAAAAAAAAAAAAAAAAAAAAAA"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(aw_tenancy_authenticate(S, bad[i], &c, &err), AW_E_AUTH_INVALID);
	assert_int_equal(c.scope, AW_SCOPE_PLATFORM_ADMIN); /* untouched: still the probe */
	assert_string_equal(c.project, "");
}

static void test_projects_and_authorization(void **state)
{
	aw_error err = {0};
	aw_ctx admin;
	auth_ok(admin_secret, &admin);
	aw_project p;
	assert_int_equal(aw_project_create(S, &admin, "tn-alpha", &p, &err), AW_OK);
	assert_string_equal(p.created_by, "bootstrap");
	assert_int_equal(aw_project_create(S, &admin, "tn-beta", &p, &err), AW_OK);
	assert_int_equal(aw_project_create(S, &admin, "tn-alpha", &p, &err), AW_E_TENANT_EXISTS);
	assert_int_equal(aw_project_create(S, &admin, "Bad", &p, &err), AW_E_TENANT_SLUG);
	assert_int_equal(aw_project_create(S, &admin, "__platform__", &p, &err), AW_E_TENANT_SLUG);

	/* a project-admin of alpha */
	aw_ctx in_alpha, scoped;
	assert_int_equal(
		aw_tenancy_authorize(&admin, "tn-alpha", AW_SCOPE_PROJECT_ADMIN, &in_alpha, &err),
		AW_OK);
	aw_apikey k;
	char secret[AW_KEY_SECRET_LEN + 1];
	assert_int_equal(aw_key_create(S, &in_alpha, "alpha-admin", AW_SCOPE_PROJECT_ADMIN, &k,
				       secret, &err),
			 AW_OK);
	aw_ctx aa;
	auth_ok(secret, &aa);
	assert_string_equal(aa.project, "tn-alpha");
	assert_int_equal(
		aw_tenancy_authorize(&aa, "tn-alpha", AW_SCOPE_PROJECT_ADMIN, &scoped, &err),
		AW_OK);
	/* another tenant answers exactly like a missing one */
	assert_int_equal(aw_tenancy_authorize(&aa, "tn-beta", AW_SCOPE_READER, &scoped, &err),
			 AW_E_TENANT_NOT_FOUND);
	assert_int_equal(aw_tenancy_authorize(&aa, "tn-nosuch", AW_SCOPE_READER, &scoped, &err),
			 AW_E_TENANT_NOT_FOUND);
	/* no escalation: project-admin cannot mint platform-admin, reader cannot admin */
	assert_int_equal(aw_key_create(S, &aa, "x", AW_SCOPE_PLATFORM_ADMIN, &k, secret, &err),
			 AW_E_KEY_SCOPE);
	assert_int_equal(aw_key_create(S, &aa, "reader1", AW_SCOPE_READER, &k, secret, &err),
			 AW_OK);
	aw_ctx rd;
	auth_ok(secret, &rd);
	assert_int_equal(
		aw_tenancy_authorize(&rd, "tn-alpha", AW_SCOPE_PROJECT_ADMIN, &scoped, &err),
		AW_E_AUTH_SCOPE);
	assert_int_equal(aw_key_create(S, &rd, "op", AW_SCOPE_OPERATOR, &k, secret, &err),
			 AW_E_AUTH_SCOPE);
	assert_int_equal(aw_key_create(S, &aa, "bad name", AW_SCOPE_READER, &k, secret, &err),
			 AW_E_REQ_INVALID);

	/* non-platform callers list only their own project */
	aw_project *list = NULL;
	int n = 0;
	assert_int_equal(aw_project_list(S, &aa, NULL, 100, &list, &n, &err), AW_OK);
	assert_int_equal(n, 1);
	assert_string_equal(list[0].project_id, "tn-alpha");
	free(list);
	assert_int_equal(aw_project_list(S, &admin, NULL, 100, &list, &n, &err), AW_OK);
	assert_int_equal(n, 3); /* __platform__, tn-alpha, tn-beta */
	free(list);
}

static void test_key_revoke_cuts_access(void **state)
{
	aw_error err = {0};
	aw_ctx admin, alpha;
	auth_ok(admin_secret, &admin);
	assert_int_equal(
		aw_tenancy_authorize(&admin, "tn-alpha", AW_SCOPE_PROJECT_ADMIN, &alpha, &err),
		AW_OK);
	aw_apikey k;
	char secret[AW_KEY_SECRET_LEN + 1];
	assert_int_equal(aw_key_create(S, &alpha, "temp", AW_SCOPE_OPERATOR, &k, secret, &err),
			 AW_OK);
	aw_ctx c;
	auth_ok(secret, &c);
	/* beta cannot revoke alpha's key, and it keeps working */
	aw_ctx beta;
	assert_int_equal(
		aw_tenancy_authorize(&admin, "tn-beta", AW_SCOPE_PROJECT_ADMIN, &beta, &err),
		AW_OK);
	assert_int_equal(aw_key_revoke(S, &beta, k.key_id, &err), AW_E_KEY_NOT_FOUND);
	auth_ok(secret, &c);
	assert_int_equal(aw_key_revoke(S, &alpha, "not-a-uuid", &err), AW_E_REQ_ID);
	assert_int_equal(aw_key_revoke(S, &alpha, k.key_id, &err), AW_OK);
	aw_ctx_system(&c, NULL);
	assert_int_equal(aw_tenancy_authenticate(S, secret, &c, &err), AW_E_AUTH_INVALID);
	assert_int_equal(aw_key_revoke(S, &alpha, k.key_id, &err), AW_E_KEY_REVOKED);
	/* the stored record never holds the secret */
	aw_apikey *keys = NULL;
	int n = 0;
	assert_int_equal(aw_key_list(S, &alpha, &keys, &n, &err), AW_OK);
	for (int i = 0; i < n; i++)
		assert_null(strstr(keys[i].key_prefix, secret + 12));
	free(keys);
	/* keys of a missing project: not found */
	aw_ctx ghost;
	aw_ctx_with_project(&admin, "tn-ghost", &ghost);
	assert_int_equal(aw_key_list(S, &ghost, &keys, &n, &err), AW_E_TENANT_NOT_FOUND);
	assert_int_equal(aw_key_create(S, &ghost, "x", AW_SCOPE_READER, &k, secret, &err),
			 AW_E_TENANT_NOT_FOUND);
}

/* A virtual key's limits: written, read back on both stores, merged by an
 * update, invisible and unchangeable from another project, and an expiry
 * that refuses the key with its own code. */
static void test_key_limits(void **state)
{
	(void)state;
	aw_error err = {0};
	aw_ctx admin, alpha, beta;
	auth_ok(admin_secret, &admin);
	assert_int_equal(
		aw_tenancy_authorize(&admin, "tn-alpha", AW_SCOPE_PROJECT_ADMIN, &alpha, &err),
		AW_OK);
	assert_int_equal(
		aw_tenancy_authorize(&admin, "tn-beta", AW_SCOPE_PROJECT_ADMIN, &beta, &err),
		AW_OK);
	json_t *doc = json_loads("{\"models\":[\"chat\"],\"rpm\":5,\"tpm\":100,\"budget\":"
				 "{\"tokens\":1000,\"period\":\"day\"},\"expires_at\":"
				 "\"2099-01-01T00:00:00Z\",\"metadata\":{\"team\":\"search\","
				 "\"user\":\"alice\"}}",
				 0, NULL);
	aw_key_limits lim;
	assert_int_equal(aw_key_limits_parse(doc, NULL, &lim, &err), AW_OK);
	json_decref(doc);
	aw_apikey k;
	char secret[AW_KEY_SECRET_LEN + 1];
	assert_int_equal(
		aw_key_create_limited(S, &alpha, "vk", AW_SCOPE_WORKER, &lim, &k, secret, &err),
		AW_OK);
	/* what authentication hands the gateway */
	aw_ctx c;
	aw_key_limits got;
	aw_ctx_system(&c, NULL);
	assert_int_equal(aw_tenancy_authenticate_key(S, secret, &c, &got, &err), AW_OK);
	assert_int_equal(got.rpm, 5);
	assert_int_equal(got.tpm, 100);
	assert_int_equal(got.budget_tokens, 1000);
	assert_int_equal(got.budget_cost, -1);
	assert_string_equal(got.budget_period, "day");
	assert_string_equal(got.team, "search");
	assert_string_equal(got.user, "alice");
	assert_string_equal(got.expires_at, "2099-01-01T00:00:00.000Z");
	assert_true(aw_key_allows(&got, "chat"));
	assert_false(aw_key_allows(&got, "other"));
	/* another project sees nothing and changes nothing */
	aw_apikey other;
	assert_int_equal(aw_key_get(S, &beta, k.key_id, &other, &err), AW_E_KEY_NOT_FOUND);
	json_t *patch = json_loads("{\"rpm\":50}", 0, NULL);
	assert_int_equal(aw_key_update(S, &beta, k.key_id, patch, &other, &err),
			 AW_E_KEY_NOT_FOUND);
	/* a merge: rpm replaced, the budget's tokens removed with its cost set,
	 * the user removed, the rest kept */
	json_decref(patch);
	patch = json_loads("{\"rpm\":50,\"budget\":{\"tokens\":null,\"cost_usd\":2.5},"
			   "\"metadata\":{\"user\":null}}",
			   0, NULL);
	assert_int_equal(aw_key_update(S, &alpha, k.key_id, patch, &other, &err), AW_OK);
	json_decref(patch);
	assert_int_equal(aw_key_get(S, &alpha, k.key_id, &other, &err), AW_OK);
	aw_key_limits_load(other.limits, other.expires_at, &got);
	assert_int_equal(got.rpm, 50);
	assert_int_equal(got.tpm, 100);
	assert_int_equal(got.budget_tokens, -1);
	assert_int_equal(got.budget_cost, 2500000);
	assert_string_equal(got.budget_period, "day");
	assert_string_equal(got.team, "search");
	assert_string_equal(got.user, "");
	/* a bad merge changes nothing and names the member */
	patch = json_loads("{\"budget\":{\"cost_usd\":null}}", 0, NULL);
	assert_int_equal(aw_key_update(S, &alpha, k.key_id, patch, &other, &err), AW_E_KEY_LIMITS);
	assert_string_equal(err.where, "/budget");
	json_decref(patch);
	/* expired: refused with its own code; lifted: works again */
	patch = json_loads("{\"expires_at\":\"2001-01-01T00:00:00Z\"}", 0, NULL);
	assert_int_equal(aw_key_update(S, &alpha, k.key_id, patch, &other, &err), AW_OK);
	json_decref(patch);
	aw_ctx_system(&c, NULL);
	assert_int_equal(aw_tenancy_authenticate_key(S, secret, &c, &got, &err), AW_E_AUTH_EXPIRED);
	patch = json_loads("{\"expires_at\":null}", 0, NULL);
	assert_int_equal(aw_key_update(S, &alpha, k.key_id, patch, &other, &err), AW_OK);
	json_decref(patch);
	auth_ok(secret, &c);
	/* a key created already expired is refused at creation */
	aw_key_limits past;
	aw_key_limits_none(&past);
	snprintf(past.expires_at, sizeof past.expires_at, "2001-01-01T00:00:00.000Z");
	assert_int_equal(aw_key_create_limited(S, &alpha, "vk-past", AW_SCOPE_WORKER, &past, &k,
					       secret, &err),
			 AW_E_KEY_LIMITS);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bootstrap_once),
		cmocka_unit_test(test_bootstrap_env_key_installs_and_rotates),
		cmocka_unit_test(test_authenticate_rejects),
		cmocka_unit_test(test_concurrent_bootstrap),
		cmocka_unit_test(test_projects_and_authorization),
		cmocka_unit_test(test_key_revoke_cuts_access),
		cmocka_unit_test(test_key_limits),
	};
	return AW_TEST_MAIN("tenancy", tests, setup, teardown);
}
