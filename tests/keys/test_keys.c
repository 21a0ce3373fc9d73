/*
 * test_keys.c - the Redis key namespace and the INV-1 migration (argv[1]:
 * sqlite | postgres for the phase store; a private redis-server):
 *  - the registry holds every inventoried pattern, tenant forms are
 *    "{project_id}:...", only the three platform resources are "platform:...";
 *  - components that could escape a tenant prefix or widen a pattern are refused;
 *  - classification of legacy, prefixed and unknown keys;
 *  - a full none -> A -> B -> C -> done cycle over thousands of seeded keys with
 *    a load thread reading and writing through the wrapper against a model:
 *    0 values lost, TTLs preserved within 1 s, counters exact, gates refuse
 *    (window not elapsed; fallback rate >= 1%) and --force is audited.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "awooop/audit.h"
#include "awooop/bus.h"
#include "awooop/keymig.h"
#include "awooop/redis.h"
#include "awooop/tenancy.h"
#include "support.h"

#define S (aw_fx.s)
static aw_test_redis R;
static redisContext *raw;

static int setup(void **state)
{
	if (aw_test_store_up(NULL))
		return -1;
	aw_ctx admin;
	aw_test_ctx(&admin, NULL, AW_SCOPE_PLATFORM_ADMIN, "root");
	aw_error err = {0};
	char printed[AW_KEY_SECRET_LEN + 1];
	if (aw_tenancy_bootstrap(S, NULL, printed, &err) || /* __platform__ */
	    aw_project_create(S, &admin, "awoooi", NULL, &err) ||
	    aw_project_create(S, &admin, "ewoooc", NULL, &err))
		return -1;
	aw_test_redis_init(&R);
	/* every test over an ACL user, with TLS ("tls") or without ("acl") */
	const char *secure = getenv("AWOOOP_TEST_REDIS_SECURE");
	if (secure)
		aw_test_redis_secure(&R);
	aw_test_redis_start(&R);
	if (secure && !strcmp(secure, "acl"))
		snprintf(R.url, sizeof R.url, "%s", R.plain_url);
	aw_redis_url u;
	if (aw_redis_url_parse(R.url, &u, &err))
		return -1;
	raw = aw_redis_connect(&u, 2000, &err);
	return raw ? 0 : -1;
}

static int teardown(void **state)
{
	aw_redis_free(raw);
	aw_test_redis_cleanup(&R);
	aw_test_store_down();
	return 0;
}

static void test_registry(void **state)
{
	const char *want[] = {"ollama_topology",
			      "gemini_daily_count",
			      "telegram_polling_leader",
			      "telegram_silence",
			      "ai_rate_total_cost",
			      "approval",
			      "incident",
			      "consensus",
			      "playbook",
			      "playbook_embedding_index",
			      "playbook_index_alert",
			      "playbook_embedding",
			      "km_backfill_dlq",
			      "anomaly_disposition",
			      "anomaly_metadata",
			      "anomaly_permanent_fix",
			      "anomaly_repair_count",
			      "anomaly_repair_history",
			      "anomaly_timeline",
			      "hermes_session",
			      "hermes_rl",
			      "hermes_approvers",
			      "session",
			      "tg_sent",
			      "telegram_user"};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		assert_non_null(aw_keys_find(want[i]));
	int platform = 0;
	for (int i = 0; i < aw_keys_count(); i++) {
		const aw_key_pattern *p = aw_keys_at(i);
		if (p->scope == AW_KEY_PLATFORM) {
			platform++;
			assert_int_equal(strncmp(p->modern, "platform:", 9), 0);
		} else {
			assert_int_equal(strncmp(p->modern, "{project_id}:", 13), 0);
		}
		assert_null(strstr(p->legacy, "approval:123:lock")); /* the test key is gone */
	}
	assert_int_equal(platform, 3);
}

static void test_components_cannot_escape(void **state)
{
	const aw_key_pattern *p = aw_keys_find("incident");
	char key[256];
	aw_error err = {0};
	const char *ok[] = {"42"};
	assert_int_equal(aw_keys_build(p, 1, "awoooi", ok, 1, key, sizeof key, &err), AW_OK);
	assert_string_equal(key, "awoooi:incident:42");
	const char *bad[] = {
		"",	"a:b", "ewoooc:incident:1", "*", "inc?", "[a-z]", "a\\b", "a b", "a\nb",
		"a\tb", "\x01"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *v[] = {bad[i]};
		assert_int_equal(aw_keys_build(p, 1, "awoooi", v, 1, key, sizeof key, &err),
				 AW_E_KEYS_COMPONENT);
	}
	char longv[200];
	memset(longv, 'x', sizeof longv - 1);
	longv[sizeof longv - 1] = '\0';
	const char *lv[] = {longv};
	assert_int_equal(aw_keys_build(p, 1, "awoooi", lv, 1, key, sizeof key, &err),
			 AW_E_KEYS_COMPONENT);
	/* the project itself cannot widen or cross the prefix */
	const char *projects[] = {"ewoooc:x", "*", "awoooi*", "", "Platform", "__x"};
	for (size_t i = 0; i < sizeof projects / sizeof projects[0]; i++)
		assert_int_equal(aw_keys_build(p, 1, projects[i], ok, 1, key, sizeof key, &err),
				 AW_E_TENANT_SLUG);
	/* too few or too many components */
	assert_int_equal(aw_keys_build(p, 1, "awoooi", ok, 0, key, sizeof key, &err),
			 AW_E_KEYS_COMPONENT);
	const char *two[] = {"1", "2"};
	assert_int_equal(aw_keys_build(p, 1, "awoooi", two, 2, key, sizeof key, &err),
			 AW_E_KEYS_COMPONENT);
	/* a platform resource ignores the tenant */
	const char *date[] = {"2026-11-29"};
	assert_int_equal(aw_keys_build(aw_keys_find("gemini_daily_count"), 1, "awoooi", date, 1,
				       key, sizeof key, &err),
			 AW_OK);
	assert_string_equal(key, "platform:ollama:gemini_daily_count:2026-11-29");
}

static void test_classify(void **state)
{
	int modern;
	char project[64];
	const aw_key_pattern *p = aw_keys_classify("incident:7", &modern, project, sizeof project);
	assert_non_null(p);
	assert_string_equal(p->name, "incident");
	assert_false(modern);
	p = aw_keys_classify("ewoooc:incident:7", &modern, project, sizeof project);
	assert_string_equal(p->name, "incident");
	assert_true(modern);
	assert_string_equal(project, "ewoooc");
	p = aw_keys_classify("telegram:polling:leader", &modern, project, sizeof project);
	assert_string_equal(p->name, "telegram_polling_leader");
	p = aw_keys_classify("telegram:12345:state", &modern, project, sizeof project);
	assert_string_equal(p->name, "telegram_user");
	p = aw_keys_classify("playbook:embedding:index", &modern, project, sizeof project);
	assert_string_equal(p->name, "playbook_embedding_index");
	p = aw_keys_classify("awoooi:telegram:silence:ops", &modern, project, sizeof project);
	assert_string_equal(p->name, "telegram_silence");
	assert_null(aw_keys_classify("random:thing:here:x", &modern, project, sizeof project));
	assert_null(aw_keys_classify("approval:123:lock:x", &modern, project, sizeof project));
}

/* ---- the migration cycle */

#define N 1000 /* keys per pattern */
static aw_kv *KV;
static char model_str[N][32];
static long long model_cnt[N];
static atomic_bool load_stop;
static long lost, checked;
static pthread_mutex_t model_mu = PTHREAD_MUTEX_INITIALIZER;

static void seed(void)
{
	for (int i = 0; i < N; i++) {
		redisReply *r;
		snprintf(model_str[i], sizeof model_str[i], "v%d", i);
		r = redisCommand(raw, "SET tg_sent:fp%d %s EX 600", i, model_str[i]);
		freeReplyObject(r);
		model_cnt[i] = i;
		r = redisCommand(raw, "SET anomaly:repair_count:a%d %d EX 604800", i, i);
		freeReplyObject(r);
		r = redisCommand(raw, "HSET anomaly:metadata:a%d severity s%d", i, i);
		freeReplyObject(r);
		r = redisCommand(raw, "EXPIRE anomaly:metadata:a%d 604800", i);
		freeReplyObject(r);
		r = redisCommand(raw, "RPUSH anomaly:timeline:a%d e0 e1", i);
		freeReplyObject(r);
		r = redisCommand(raw, "SET telegram_silence:t%d on EX 3600", i);
		freeReplyObject(r);
	}
}

static void *load(void *arg)
{
	aw_ctx c;
	aw_test_ctx(&c, "awoooi", AW_SCOPE_WORKER, "load");
	unsigned seed_ = 7;
	while (!load_stop) {
		int i = (int)(rand_r(&seed_) % N);
		char id[16], aid[16];
		snprintf(id, sizeof id, "fp%d", i);
		snprintf(aid, sizeof aid, "a%d", i);
		const char *v1[] = {id}, *v2[] = {aid};
		aw_error err = {0};
		pthread_mutex_lock(&model_mu);
		int op = (int)(rand_r(&seed_) % 4);
		if (op == 0) { /* write */
			snprintf(model_str[i], sizeof model_str[i], "w%u", rand_r(&seed_));
			if (aw_kv_set(KV, &c, "tg_sent", v1, 1, model_str[i], 600, &err))
				lost++;
		} else if (op == 1) { /* counter */
			long long out = 0;
			if (aw_kv_incr(KV, &c, "anomaly_repair_count", v2, 1, 1, &out, &err) ||
			    out != ++model_cnt[i])
				lost++;
		} else { /* reads */
			char *got = NULL;
			checked++;
			if (aw_kv_get(KV, &c, "tg_sent", v1, 1, &got, &err) || !got ||
			    strcmp(got, model_str[i]))
				lost++;
			free(got);
			char *h = NULL;
			if (aw_kv_hget(KV, &c, "anomaly_metadata", v2, 1, "severity", &h, &err) ||
			    !h)
				lost++;
			free(h);
		}
		pthread_mutex_unlock(&model_mu);
	}
	return NULL;
}

static void migrate(const char *pattern, const char *to, aw_err want, int force)
{
	aw_ctx c;
	aw_test_ctx(&c, "awoooi", AW_SCOPE_PROJECT_ADMIN, "operator");
	aw_kv_status st;
	aw_error err = {0};
	aw_err e = aw_keymig_step(S, KV, &c, pattern, to, force, &st, &err);
	if (e != want)
		fail_msg("migrate %s to %s: %s %s (want %s)", pattern, to, aw_err_code(e), err.msg,
			 aw_err_code(want));
}

static long long pttl(const char *key)
{
	redisReply *r = redisCommand(raw, "PTTL %s", key);
	long long v = r->integer;
	freeReplyObject(r);
	return v;
}

static void test_migration_cycle(void **state)
{
	aw_kv_opts o = {.legacy_project = "awoooi",
			.window_a_s = 1,
			.window_b_s = 1,
			.window_c_s = 1,
			.phase_cache_ms = 100};
	aw_error err = {0};
	assert_int_equal(aw_kv_open(R.url, S, &o, &KV, &err), AW_OK);
	seed();
	aw_ctx c;
	aw_test_ctx(&c, "awoooi", AW_SCOPE_PROJECT_ADMIN, "operator");

	/* gate: fallback rate >= 1% refuses B -> C (telegram_silence) */
	migrate("telegram_silence", "B", AW_E_KEYS_PHASE, 0); /* one step at a time */
	migrate("telegram_silence", "A", AW_OK, 0);
	migrate("telegram_silence", "B", AW_E_KEYS_GATE, 0); /* window not elapsed */
	sleep(1);
	migrate("telegram_silence", "B", AW_OK, 0);
	sleep(1); /* B's window has run; now 10 reads, every one a fallback */
	for (int i = 0; i < 10; i++) {
		char t[16], *got = NULL;
		snprintf(t, sizeof t, "t%d", i);
		const char *v[] = {t};
		assert_int_equal(aw_kv_get(KV, &c, "telegram_silence", v, 1, &got, &err), AW_OK);
		assert_string_equal(got, "on");
		free(got);
	}
	aw_kv_status st;
	assert_int_equal(aw_kv_status_get(KV, &c, "telegram_silence", &st, &err), AW_OK);
	assert_int_equal(st.reads, 10); /* counters exact */
	assert_int_equal(st.fallbacks, 10);
	migrate("telegram_silence", "C", AW_E_KEYS_GATE, 0); /* 100% >= 1% */
	migrate("telegram_silence", "C", AW_OK, 1);	     /* forced, audited */

	/* the full cycle of three patterns under load */
	pthread_t th;
	load_stop = 0;
	pthread_create(&th, NULL, load, NULL);
	const char *pats[] = {"tg_sent", "anomaly_repair_count", "anomaly_metadata"};
	for (int k = 0; k < 3; k++)
		migrate(pats[k], "A", AW_OK, 0);
	usleep(1100000);
	for (int k = 0; k < 3; k++)
		migrate(pats[k], "B", AW_OK, 0);
	for (int k = 0; k < 3; k++) {
		long long copied = 0, skipped = 0;
		assert_int_equal(
			aw_kv_backfill(KV, &c, pats[k], 0, &copied, &skipped, NULL, NULL, &err),
			AW_OK);
		assert_int_equal(copied + skipped, N);
	}
	/* TTLs preserved within 1 s */
	for (int i = 0; i < N; i += 97) {
		char a[64], b[64];
		snprintf(a, sizeof a, "anomaly:metadata:a%d", i);
		snprintf(b, sizeof b, "awoooi:anomaly:metadata:a%d", i);
		long long ta = pttl(a), tb = pttl(b);
		assert_true(ta > 0 && tb > 0);
		assert_true(llabs(ta - tb) <= 1000);
	}
	usleep(2100000); /* the fallbacks before the backfill slide out of B's window */
	/* after the backfill, reads hit the new keys: the fallback rate is low */
	for (int k = 0; k < 3; k++) {
		assert_int_equal(aw_kv_status_get(KV, &c, pats[k], &st, &err), AW_OK);
		if (st.reads && st.fallbacks * 100 >= st.reads)
			fail_msg("%s: %lld fallbacks in %lld reads", pats[k], st.fallbacks,
				 st.reads);
	}
	for (int k = 0; k < 3; k++) {
		aw_kv_status s2;
		aw_kv_status_get(KV, &c, pats[k], &s2, &err);
		if (s2.reads == 0) /* anomaly_repair_count is only written: gate needs reads */
			migrate(pats[k], "C", AW_E_KEYS_GATE, 0), migrate(pats[k], "C", AW_OK, 1);
		else
			migrate(pats[k], "C", AW_OK, 0);
	}
	usleep(1100000);
	for (int k = 0; k < 3; k++)
		migrate(pats[k], "done", AW_OK, 0); /* zero old-key reads in C */
	usleep(500000);
	load_stop = 1;
	pthread_join(th, NULL);
	assert_int_equal(lost, 0);
	assert_true(checked > 1000);

	/* every value readable afterwards, from new keys only */
	for (int i = 0; i < N; i++) {
		char id[16], *got = NULL;
		snprintf(id, sizeof id, "fp%d", i);
		const char *v[] = {id};
		assert_int_equal(aw_kv_get(KV, &c, "tg_sent", v, 1, &got, &err), AW_OK);
		assert_non_null(got);
		assert_string_equal(got, model_str[i]);
		free(got);
	}
	/* another tenant never sees the legacy data */
	aw_ctx other;
	aw_test_ctx(&other, "ewoooc", AW_SCOPE_WORKER, "w");
	const char *v0[] = {"fp0"};
	char *got = NULL;
	assert_int_equal(aw_kv_get(KV, &other, "tg_sent", v0, 1, &got, &err), AW_OK);
	assert_null(got);
	/* each step is in the audit trail, the forced ones say so */
	aw_txn *t = NULL;
	aw_audit_row *rows = NULL;
	int n = 0;
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_READ, &t, &err), AW_OK);
	assert_int_equal(aw_store_audit_list(t, 0, "keys.migrate", "", 100, &rows, &n, &err),
			 AW_OK);
	aw_store_rollback(t);
	assert_int_equal(n, 3 + 3 * 4);
	int forced = 0;
	for (int i = 0; i < n; i++)
		forced += strstr(rows[i].payload, "\"forced\":true") != NULL;
	assert_int_equal(forced, 2);
	aw_audit_rows_free(rows, n);
	aw_kv_close(KV);
}

/* ---- every inventoried pattern through the whole cycle */

#define PER 120 /* keys per pattern */

/* Component values for key i of pattern p (all distinct, all valid). */
static int comps(const aw_key_pattern *p, int i, char buf[4][32], const char **vals)
{
	int n = 0;
	for (const char *t = strchr(p->legacy, '{'); t && n < 4; t = strchr(t + 1, '{')) {
		snprintf(buf[n], 32, "c%d-%d", n, i);
		vals[n] = buf[n];
		n++;
	}
	return n;
}

static void test_every_pattern_full_cycle(void **state)
{
	aw_kv_opts o = {.legacy_project = "awoooi",
			.window_a_s = 1,
			.window_b_s = 1,
			.window_c_s = 1,
			.phase_cache_ms = 50};
	aw_error err = {0};
	aw_kv *kv = NULL;
	assert_int_equal(aw_kv_open(R.url, S, &o, &kv, &err), AW_OK);
	aw_ctx c;
	aw_test_ctx(&c, "awoooi", AW_SCOPE_PROJECT_ADMIN, "operator");
	int np = aw_keys_count(), seeded = 0;
	/* the generator: legacy keys of every pattern, by type, with the TTL the
	 * inventory expects (patterns whose TTL varies get one hour) */
	for (int k = 0; k < np; k++) {
		const aw_key_pattern *p = aw_keys_at(k);
		int many = strchr(p->legacy, '{') != NULL;
		for (int i = 0; i < (many ? PER : 1); i++) {
			char buf[4][32], key[256];
			const char *vals[4];
			int n = comps(p, i, buf, vals);
			assert_int_equal(
				aw_keys_build(p, 0, "awoooi", vals, n, key, sizeof key, &err),
				AW_OK);
			redisReply *r;
			if (!strcmp(p->type, "hash"))
				r = redisCommand(raw, "HSET %s f v%d", key, i);
			else if (!strcmp(p->type, "list"))
				r = redisCommand(raw, "RPUSH %s v%d", key, i);
			else if (!strcmp(p->type, "set"))
				r = redisCommand(raw, "SADD %s v%d", key, i);
			else
				r = redisCommand(raw, "SET %s v%d", key, i);
			freeReplyObject(r);
			int ttl = p->ttl_s > 0 ? p->ttl_s : p->ttl_s < 0 ? 3600 : 0;
			if (ttl) {
				r = redisCommand(raw, "EXPIRE %s %d", key, ttl);
				freeReplyObject(r);
			}
			seeded++;
		}
	}
	assert_true(seeded >= 2000);
	/* A, then B with backfill, then C and done: for every pattern */
	const char *steps[] = {"A", "B", "C", "done"};
	for (int st = 0; st < 4; st++) {
		if (st)
			usleep(1100000); /* each window is 1 s */
		for (int k = 0; k < np; k++) {
			const aw_key_pattern *p = aw_keys_at(k);
			aw_ctx pc = c;
			if (p->scope == AW_KEY_PLATFORM)
				aw_ctx_with_project(&c, AW_PLATFORM_PROJECT, &pc);
			aw_kv_status s2;
			aw_err e = aw_keymig_step(S, kv, &pc, p->name, steps[st], 1, &s2, &err);
			if (e && e != AW_E_KEYS_PHASE) /* PHASE: moved ahead earlier in this file */
				fail_msg("%s -> %s: %s", p->name, steps[st], err.msg);
			if (st == 1) { /* idempotent, whatever the phase */
				long long copied = 0, skipped = 0;
				assert_int_equal(aw_kv_backfill(kv, &pc, p->name, 0, &copied,
								&skipped, NULL, NULL, &err),
						 AW_OK);
			}
		}
	}
	/* every seeded string value reads back through the wrapper (now "done":
	 * new keys only), and every new key kept the legacy TTL within 1 s */
	int checked_keys = 0;
	for (int k = 0; k < np; k++) {
		const aw_key_pattern *p = aw_keys_at(k);
		int many = strchr(p->legacy, '{') != NULL;
		for (int i = 0; i < (many ? PER : 1); i++) {
			char buf[4][32], key[256], old[256];
			const char *vals[4];
			int n = comps(p, i, buf, vals);
			aw_keys_build(p, 1, "awoooi", vals, n, key, sizeof key, &err);
			aw_keys_build(p, 0, "awoooi", vals, n, old, sizeof old, &err);
			redisReply *r = redisCommand(raw, "TYPE %s", key);
			if (strcmp(r->str, p->type) != 0)
				fail_msg("%s: new key %s is %s, want %s", p->name, key, r->str,
					 p->type);
			freeReplyObject(r);
			long long tn = pttl(key), to = pttl(old);
			if (p->ttl_s != 0 && (tn <= 0 || (to > 0 && llabs(tn - to) > 1000)))
				fail_msg("%s: ttl new %lld old %lld", p->name, tn, to);
			if (!strcmp(p->type, "string") && strcmp(p->name, "tg_sent") &&
			    strcmp(p->name, "anomaly_repair_count")) {
				char *got = NULL;
				aw_ctx pc = c;
				if (p->scope == AW_KEY_PLATFORM)
					aw_ctx_with_project(&c, AW_PLATFORM_PROJECT, &pc);
				assert_int_equal(aw_kv_get(kv, &pc, p->name, vals, n, &got, &err),
						 AW_OK);
				char want[16];
				snprintf(want, sizeof want, "v%d", i);
				if (!got || strcmp(got, want))
					fail_msg("%s #%d lost: %s", p->name, i,
						 got ? got : "(missing)");
				free(got);
			}
			checked_keys++;
		}
	}
	assert_int_equal(checked_keys, seeded);
	aw_kv_close(kv);
}

/* ------------------------------------------------------------ secure Redis */

static atomic_int bus_got;

static void on_bus(void *ud, const char *channel, const char *payload, size_t len)
{
	(void)ud;
	(void)channel;
	if (len == 5 && !memcmp(payload, "hello", 5))
		atomic_store(&bus_got, 1);
}

/* url is refused, saying why, and never printing the password. */
static void refused(const char *url, const char *why, const char *password)
{
	aw_error err = {0};
	char shown[600];
	aw_redis_url_redact(url, shown, sizeof shown);
	if (aw_redis_ping(url, 1000, &err) == AW_OK)
		fail_msg("%s: accepted", shown);
	printf("refused %s: %s\n", shown, err.msg);
	if (!strstr(err.msg, why))
		fail_msg("%s: '%s' does not say '%s'", shown, err.msg, why);
	assert_null(strstr(err.msg, password));
	assert_null(strstr(shown, password));
}

/* The bus publishes and receives over url. */
static void bus_works(const char *url)
{
	aw_bus *b = NULL;
	aw_error err = {0};
	assert_int_equal(aw_bus_open(url, &b, &err), AW_OK);
	atomic_store(&bus_got, 0);
	assert_int_equal(aw_bus_subscribe(b, "aw:test:*", on_bus, NULL, NULL, &err), AW_OK);
	for (int i = 0; i < 1000 && !aw_bus_connected(b); i++) /* TSan: slow handshakes */
		usleep(10000);
	assert_true(aw_bus_connected(b));
	for (int i = 0; i < 200 && !atomic_load(&bus_got); i++) {
		if (i % 20 == 0)
			assert_int_equal(aw_bus_publish(b, "aw:test:x", "hello", &err), AW_OK);
		usleep(10000);
	}
	assert_true(atomic_load(&bus_got));
	aw_bus_close(b);
}

/* A Redis 7 with an ACL user (the default user off) and TLS on its
 * tls-port: the right credentials and CA work for a ping and for the bus;
 * a wrong password, none, a wrong CA, a wrong server name, TLS to the plain
 * port and plain to the TLS port are refused with clear errors that never
 * hold the password. (keys_tls_* and keys_acl_* run every key wrapper test over it.) */
static void test_secure_redis(void **state)
{
	(void)state;
	aw_test_redis T;
	aw_test_redis_init(&T);
	aw_test_redis_secure(&T);
	aw_test_redis_start(&T);
	aw_error err = {0};
	assert_int_equal(aw_redis_ping(T.url, 1000, &err), AW_OK);
	assert_int_equal(aw_redis_ping(T.plain_url, 1000, &err), AW_OK);
	char u[700], other[128];
	snprintf(u, sizeof u, "redis://app:wrong-%s@127.0.0.1:%d", T.password, T.port);
	refused(u, "WRONGPASS", T.password);
	snprintf(u, sizeof u, "redis://127.0.0.1:%d", T.port);
	refused(u, "NOAUTH", T.password);
	aw_test_redis_other_ca(&T, other, sizeof other);
	snprintf(u, sizeof u, "rediss://app:%s@127.0.0.1:%d?tls_ca=%s", T.password, T.tls_port,
		 other);
	refused(u, "certificate verify failed", T.password);
	snprintf(u, sizeof u, "rediss://app:%s@127.0.0.1:%d?tls_ca=%s&tls_server_name=evil.example",
		 T.password, T.tls_port, T.ca);
	refused(u, "certificate verify failed", T.password);
	snprintf(u, sizeof u, "rediss://app:%s@127.0.0.1:%d?tls_ca=%s", T.password, T.port, T.ca);
	refused(u, "TLS handshake failed", T.password);
	snprintf(u, sizeof u, "redis://app:%s@127.0.0.1:%d", T.password, T.tls_port);
	refused(u, "redis at 127.0.0.1", T.password);
	/* a client certificate the server's CA signed is accepted */
	snprintf(u, sizeof u, "%s&tls_cert=%s/test-server.pem&tls_key=%s/test-server.key", T.url,
		 T.dir, T.dir);
	assert_int_equal(aw_redis_ping(u, 1000, &err), AW_OK);
	bus_works(T.url);
	bus_works(T.plain_url);
	aw_test_redis_cleanup(&T);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_components_cannot_escape),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_migration_cycle),
		cmocka_unit_test(test_every_pattern_full_cycle),
		cmocka_unit_test(test_secure_redis),
	};
	return AW_TEST_MAIN("keys", tests, setup, teardown);
}
