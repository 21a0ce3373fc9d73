/*
 * test_redaction.c - a project's custom redaction patterns (redaction.h) on
 * a real store (argv[1]: sqlite | postgres): the platform sets a list, it is
 * audited and redacts that project's text (audit payloads) and no other's;
 * a tenant's key is refused (403); a bad list is refused with its code and
 * changes nothing; another process (a fresh registry) picks a change up by
 * its version, once; concurrent writers never share a version; a pattern
 * that backtracks catastrophically does not hold an audit write.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <pthread.h>

#include "awooop/audit.h"
#include "awooop/clock.h"
#include "awooop/redact.h"
#include "awooop/redaction.h"
#include "awooop/tenancy.h"
#include "support.h"

#define S (aw_fx.s)

static const char *const projects[] = {"tenant-a", "tenant-b", NULL};

static int setup(void **state)
{
	(void)state;
	return aw_test_store_up(projects);
}

static int teardown(void **state)
{
	(void)state;
	aw_redact_custom_reset();
	aw_test_store_down();
	return 0;
}

static void admin_ctx(aw_ctx *ctx, const char *project)
{
	aw_test_ctx(ctx, project, AW_SCOPE_PLATFORM_ADMIN, "root");
}

static json_t *list_of(const char *json)
{
	json_t *l = json_loads(json, JSON_DECODE_ANY, NULL);
	assert_non_null(l);
	return l;
}

/* sets project's list as the platform; the version written */
static int64_t set_ok(const char *project, const char *json)
{
	aw_ctx ctx;
	admin_ctx(&ctx, project);
	aw_error err = {0};
	json_t *l = list_of(json);
	aw_redaction_list out;
	aw_err e = aw_redaction_set(S, &ctx, l, &out, &err);
	json_decref(l);
	if (e)
		fail_msg("set %s on %s: %s", json, project, err.msg);
	int64_t v = out.version;
	assert_true(json_equal(out.patterns, l = list_of(json)));
	json_decref(l);
	aw_redaction_list_clear(&out);
	return v;
}

static aw_redaction_list get_ok(const char *project)
{
	aw_ctx ctx;
	aw_test_ctx(&ctx, project, AW_SCOPE_OPERATOR, "op");
	aw_error err = {0};
	aw_redaction_list l;
	assert_int_equal(aw_redaction_get(S, &ctx, &l, &err), AW_OK);
	return l;
}

/* Writes an audit record with payload {"note": note} in project and returns
 * the stored payload (malloc'd). */
static char *audited(const char *project, const char *note)
{
	aw_ctx ctx;
	aw_test_ctx(&ctx, project, AW_SCOPE_OPERATOR, "op");
	aw_error err = {0};
	aw_txn *t = NULL;
	assert_int_equal(aw_store_begin(S, &ctx, AW_TXN_WRITE, &t, &err), AW_OK);
	json_t *p = json_pack("{s:s}", "note", note);
	assert_int_equal(aw_audit_record(t, &ctx, "test.note", "", p, &err), AW_OK);
	json_decref(p);
	assert_int_equal(aw_store_commit(t, &err), AW_OK);
	aw_audit_row *rows = NULL;
	int n = 0;
	aw_test_audit_rows(project, "test.note", 1000, &rows, &n);
	assert_true(n > 0);
	char *payload = strdup(rows[n - 1].payload);
	aw_audit_rows_free(rows, n);
	return payload;
}

static void test_set_redacts_and_audits(void **state)
{
	(void)state;
	aw_redaction_list l = get_ok("tenant-a");
	assert_int_equal(l.version, 0);
	assert_int_equal(json_array_size(l.patterns), 0);
	assert_string_equal(l.updated_at, "");
	aw_redaction_list_clear(&l);
	int64_t v = set_ok("tenant-a", "[{\"name\":\"employee_id\",\"pattern\":\"EMP-[0-9]{6}\"}]");
	assert_int_equal(v, 1);
	l = get_ok("tenant-a");
	assert_int_equal(l.version, 1);
	assert_string_equal(l.updated_by, "root");
	assert_string_equal(
		json_string_value(json_object_get(json_array_get(l.patterns, 0), "pattern")),
		"EMP-[0-9]{6}");
	aw_redaction_list_clear(&l);
	/* in force in this process at once */
	assert_int_equal(aw_redact_custom_version("tenant-a"), 1);
	char *p = audited("tenant-a", "EMP-123456 asked for a@b.example");
	assert_string_equal(p, "{\"note\":\"[REDACTED:custom:employee_id] asked for"
			       " [REDACTED:email]\"}");
	free(p);
	/* the change itself is in the project's chain */
	aw_audit_row *rows = NULL;
	int n = 0;
	aw_test_audit_rows("tenant-a", "redaction.patterns.set", 10, &rows, &n);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].actor, "root");
	json_t *pl = json_loads(rows[0].payload, 0, NULL);
	assert_int_equal(json_integer_value(json_object_get(pl, "version")), 1);
	assert_int_equal(json_integer_value(json_object_get(pl, "count")), 1);
	json_decref(pl);
	aw_audit_rows_free(rows, n);
}

/* tenant A's pattern never applies to tenant B's text */
static void test_tenants_isolated(void **state)
{
	(void)state;
	set_ok("tenant-a", "[{\"name\":\"employee_id\",\"pattern\":\"EMP-[0-9]{6}\"}]");
	char *b = audited("tenant-b", "EMP-123456 here");
	assert_string_equal(b, "{\"note\":\"EMP-123456 here\"}");
	free(b);
	char *a = audited("tenant-a", "EMP-123456 here");
	assert_string_equal(a, "{\"note\":\"[REDACTED:custom:employee_id] here\"}");
	free(a);
	/* B's own list is B's only */
	set_ok("tenant-b", "[{\"name\":\"badge\",\"pattern\":\"BDG\\\\d{4}\"}]");
	a = audited("tenant-a", "BDG1234 EMP-000001");
	b = audited("tenant-b", "BDG1234 EMP-000001");
	assert_string_equal(a, "{\"note\":\"BDG1234 [REDACTED:custom:employee_id]\"}");
	assert_string_equal(b, "{\"note\":\"[REDACTED:custom:badge] EMP-000001\"}");
	free(a);
	free(b);
	/* B cannot read A's list with its own key either */
	aw_ctx bk, scoped;
	aw_test_ctx(&bk, "tenant-b", AW_SCOPE_PROJECT_ADMIN, "boss");
	aw_error err = {0};
	assert_int_equal(aw_tenancy_authorize(&bk, "tenant-a", AW_SCOPE_OPERATOR, &scoped, &err),
			 AW_E_TENANT_NOT_FOUND);
}

/* only the platform sets a list: a tenant's key of any scope is refused
 * (403 over HTTP), and nothing changes */
static void test_tenant_key_refused(void **state)
{
	(void)state;
	aw_redaction_list l = get_ok("tenant-a");
	int64_t v0 = l.version;
	aw_redaction_list_clear(&l);
	aw_ctx t, scoped;
	aw_error err = {0};
	aw_test_ctx(&t, "tenant-a", AW_SCOPE_PROJECT_ADMIN, "boss");
	/* the HTTP route asks for platform-admin scope: a 403 on its own project */
	aw_err e = aw_tenancy_authorize(&t, "tenant-a", AW_SCOPE_PLATFORM_ADMIN, &scoped, &err);
	assert_int_equal(e, AW_E_AUTH_SCOPE);
	assert_int_equal(aw_err_http_status(e), 403);
	/* and the service itself, whatever reached it */
	json_t *list = list_of("[{\"name\":\"mine\",\"pattern\":\"SECRET\\\\d+\"}]");
	e = aw_redaction_set(S, &t, list, NULL, &err);
	assert_int_equal(e, AW_E_AUTH_SCOPE);
	assert_int_equal(aw_err_http_status(e), 403);
	json_decref(list);
	l = get_ok("tenant-a");
	assert_int_equal(l.version, v0);
	aw_redaction_list_clear(&l);
}

/* a bad list is refused with E-REDACT-001 and its entry's pointer; the
 * stored list, its version, the process's registry and the audit chain are
 * as they were */
static void test_bad_lists_change_nothing(void **state)
{
	(void)state;
	set_ok("tenant-a", "[{\"name\":\"employee_id\",\"pattern\":\"EMP-[0-9]{6}\"}]");
	aw_redaction_list l0 = get_ok("tenant-a");
	aw_audit_row *rows = NULL;
	int n0 = 0, n1 = 0;
	aw_test_audit_rows("tenant-a", "", 10000, &rows, &n0);
	aw_audit_rows_free(rows, n0);
	static const struct {
		const char *json, *where;
	} bad[] = {
		{"{\"name\":\"x\"}", ""},
		{"[{\"name\":\"ok\",\"pattern\":\"OK\"},{\"name\":\"e\",\"pattern\":\"a*\"}]",
		 "/1"},
		{"[{\"name\":\"e\",\"pattern\":\"(unclosed\"}]", "/0"},
		{"[{\"name\":\"e\",\"pattern\":\"(a)\\\\1\"}]", "/0"},
		{"[{\"name\":\"E\",\"pattern\":\"x\"}]", "/0"},
		{"[{\"name\":\"e\",\"pattern\":\"x\"},{\"name\":\"e\",\"pattern\":\"y\"}]", "/1"},
		{"[{\"name\":\"e\",\"pattern\":\"x\",\"flags\":\"i\"}]", "/0"},
	};
	aw_ctx ctx;
	admin_ctx(&ctx, "tenant-a");
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		aw_error err = {0};
		json_t *list = list_of(bad[i].json);
		aw_err e = aw_redaction_set(S, &ctx, list, NULL, &err);
		json_decref(list);
		if (e != AW_E_REDACT_PATTERN)
			fail_msg("%s: got %d", bad[i].json, (int)e);
		assert_int_equal(aw_err_http_status(e), 400);
		assert_string_equal(aw_err_code(e), "E-REDACT-001");
		assert_string_equal(err.where, bad[i].where);
	}
	/* the 17th pattern */
	json_t *many = json_array();
	for (int i = 0; i <= AW_REDACT_CUSTOM_MAX; i++) {
		char name[16];
		snprintf(name, sizeof name, "p%d", i);
		json_array_append_new(many, json_pack("{s:s, s:s}", "name", name, "pattern", "X"));
	}
	aw_error err = {0};
	assert_int_equal(aw_redaction_set(S, &ctx, many, NULL, &err), AW_E_REDACT_PATTERN);
	json_decref(many);
	/* the project must exist */
	aw_ctx ghost;
	admin_ctx(&ghost, "no-such-project");
	json_t *ok = list_of("[{\"name\":\"a\",\"pattern\":\"A\"}]");
	assert_int_equal(aw_redaction_set(S, &ghost, ok, NULL, &err), AW_E_TENANT_NOT_FOUND);
	json_decref(ok);
	aw_redaction_list l1 = get_ok("tenant-a");
	assert_int_equal(l1.version, l0.version);
	assert_true(json_equal(l1.patterns, l0.patterns));
	assert_int_equal(aw_redact_custom_version("tenant-a"), l0.version);
	aw_redaction_list_clear(&l0);
	aw_redaction_list_clear(&l1);
	aw_test_audit_rows("tenant-a", "", 10000, &rows, &n1);
	aw_audit_rows_free(rows, n1);
	assert_int_equal(n1, n0);
}

/* Another process: a registry of its own (reset here) learns each list by
 * its version, compiles it once, and follows later writes; a write by
 * another process (the store alone) reaches this one at the next sync, and
 * the poller does it without being asked. */
static void test_other_process_sync(void **state)
{
	(void)state;
	int64_t v = set_ok("tenant-a", "[{\"name\":\"employee_id\",\"pattern\":\"EMP-[0-9]{6}\"}]");
	aw_redact_custom_reset(); /* "a process that just started" */
	aw_error err = {0};
	int changed = -1;
	char *o = aw_redact_str_for("tenant-a", "EMP-123456");
	assert_string_equal(o, "EMP-123456");
	free(o);
	assert_int_equal(aw_redaction_sync(S, &changed, &err), AW_OK);
	assert_true(changed >= 1);
	assert_int_equal(aw_redact_custom_version("tenant-a"), v);
	o = aw_redact_str_for("tenant-a", "EMP-123456");
	assert_string_equal(o, "[REDACTED:custom:employee_id]");
	free(o);
	/* nothing moved: nothing compiled again */
	assert_int_equal(aw_redaction_sync(S, &changed, &err), AW_OK);
	assert_int_equal(changed, 0);
	/* another process writes v+1 (straight to the store: this registry
	   hears nothing of it) */
	aw_ctx ctx;
	admin_ctx(&ctx, "tenant-a");
	aw_txn *t = NULL;
	int64_t v2 = 0;
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	assert_int_equal(aw_store_begin(S, &ctx, AW_TXN_WRITE, &t, &err), AW_OK);
	assert_int_equal(
		aw_store_redaction_put(t, "[{\"name\":\"order\",\"pattern\":\"ORD-\\\\d{3}\"}]",
				       now, "root", &v2, &err),
		AW_OK);
	assert_int_equal(aw_store_commit(t, &err), AW_OK);
	assert_int_equal(v2, v + 1);
	assert_int_equal(aw_redaction_sync(S, &changed, &err), AW_OK);
	assert_int_equal(changed, 1);
	o = aw_redact_str_for("tenant-a", "EMP-123456 ORD-123");
	assert_string_equal(o, "EMP-123456 [REDACTED:custom:order]");
	free(o);
	/* the poller, every 100 ms */
	aw_redaction_poller *p = NULL;
	assert_int_equal(aw_redaction_poller_start(S, 100, &p, &err), AW_OK);
	aw_clock_now(now);
	int64_t v3 = 0;
	assert_int_equal(aw_store_begin(S, &ctx, AW_TXN_WRITE, &t, &err), AW_OK);
	assert_int_equal(aw_store_redaction_put(t, "[]", now, "root", &v3, &err), AW_OK);
	assert_int_equal(aw_store_commit(t, &err), AW_OK);
	for (int i = 0; i < 100 && aw_redact_custom_version("tenant-a") != v3; i++)
		usleep(50000);
	aw_redaction_poller_stop(p);
	assert_int_equal(aw_redact_custom_version("tenant-a"), v3);
	o = aw_redact_str_for("tenant-a", "EMP-123456 ORD-123");
	assert_string_equal(o, "EMP-123456 ORD-123");
	free(o);
}

/* clearing ([]) bumps the version: every process drops the list */
static void test_clear(void **state)
{
	(void)state;
	int64_t v = set_ok("tenant-b", "[{\"name\":\"badge\",\"pattern\":\"BDG\\\\d{4}\"}]");
	int64_t w = set_ok("tenant-b", "[]");
	assert_int_equal(w, v + 1);
	char *b = audited("tenant-b", "BDG1234");
	assert_string_equal(b, "{\"note\":\"BDG1234\"}");
	free(b);
}

static void *writer(void *arg)
{
	int64_t *got = arg;
	aw_ctx ctx;
	admin_ctx(&ctx, "tenant-b");
	for (int i = 0; i < 10; i++) {
		aw_error err = {0};
		json_t *l = json_pack("[{s:s, s:s}]", "name", "n", "pattern", "N\\d+");
		aw_redaction_list out;
		aw_err e = aw_redaction_set(S, &ctx, l, &out, &err);
		json_decref(l);
		got[i] = e ? -1 : out.version;
		aw_redaction_list_clear(&out);
	}
	return NULL;
}

/* concurrent writers: each write its own version, none lost */
static void test_concurrent_versions(void **state)
{
	(void)state;
	aw_redaction_list tmp = get_ok("tenant-b");
	int64_t base = tmp.version, got[3][10];
	aw_redaction_list_clear(&tmp);
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&th[i], NULL, writer, got[i]), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	char seen[64] = {0};
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 10; k++) {
			int64_t d = got[i][k] - base;
			if (d < 1 || d > 30 || seen[d])
				fail_msg("version %lld (base %lld) repeated or out of range",
					 (long long)got[i][k], (long long)base);
			seen[d] = 1;
		}
	aw_redaction_list l = get_ok("tenant-b");
	assert_int_equal(l.version, base + 30);
	aw_redaction_list_clear(&l);
	assert_int_equal(aw_redact_custom_version("tenant-b"), base + 30);
}

/* a pattern that backtracks catastrophically, on text made for it, in an
 * audit payload: the write finishes, the pattern is stopped and counted */
static void test_catastrophic_bounded(void **state)
{
	(void)state;
	set_ok("tenant-a", "[{\"name\":\"slow\",\"pattern\":\"(a|aa)+$\"},"
			   "{\"name\":\"employee_id\",\"pattern\":\"EMP-[0-9]{6}\"}]");
	size_t n = 512u << 10;
	char *note = malloc(n + 1);
	assert_non_null(note);
	strcpy(note, "EMP-123456 ");
	for (size_t k = strlen(note); k + 15 <= n; k += 15)
		memcpy(note + k, "aaaaaaaaaaaaaa!", 15), note[k + 15] = '\0';
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	char *p = audited("tenant-a", note);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (s > 5.0)
		fail_msg("an audit write with a catastrophic pattern took %.2f s", s);
	assert_memory_equal(p, "{\"note\":\"[REDACTED:custom:employee_id] aaaa", 43);
	free(p);
	free(note);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_redacts_and_audits),
		cmocka_unit_test(test_tenants_isolated),
		cmocka_unit_test(test_tenant_key_refused),
		cmocka_unit_test(test_bad_lists_change_nothing),
		cmocka_unit_test(test_other_process_sync),
		cmocka_unit_test(test_clear),
		cmocka_unit_test(test_concurrent_versions),
		cmocka_unit_test(test_catastrophic_bounded),
	};
	return AW_TEST_MAIN("redaction", tests, setup, teardown);
}
