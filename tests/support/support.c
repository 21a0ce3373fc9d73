/*
 * support.c - see support.h.
 */
#include "support.h"

#include <curl/curl.h>
#include <fnmatch.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "awooop/bus.h"
#include "awooop/redis.h"

#include <sqlite3.h>

#include "awooop/crypto.h"
#include "awooop/log.h"
#include "awooop/tenancy.h"

static void die(const char *what, const char *why)
{
	fprintf(stderr, "test setup failed: %s: %s\n", what, why ? why : "");
	exit(1);
}

static void pg_admin_exec(const char *sql)
{
	const char *host = getenv("AWOOOP_TEST_PG_HOST");
	const char *port = getenv("AWOOOP_TEST_PG_PORT");
	if (!host || !port)
		aw_test_skip_suite("needs PostgreSQL: AWOOOP_TEST_PG_HOST/PORT are not set (`make "
				   "test` starts one; see docs/testing.md)");
	char url[256];
	snprintf(url, sizeof url, "postgresql://postgres@%s:%s/postgres", host, port);
	PGconn *c = PQconnectdb(url);
	if (PQstatus(c) != CONNECTION_OK)
		die("connect", PQerrorMessage(c));
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		die(sql, PQerrorMessage(c));
	PQclear(r);
	PQfinish(c);
}

void aw_test_db_create(const char *backend, aw_test_db *db)
{
	memset(db, 0, sizeof *db);
	uint8_t rnd[6];
	char hex[13];
	aw_random_bytes(rnd, sizeof rnd);
	aw_hex(rnd, sizeof rnd, hex);
	aw_error err = {0};
	aw_store *s = NULL;
	if (strcmp(backend, "postgres") == 0) {
		db->pg = 1;
		snprintf(db->dbname, sizeof db->dbname, "aw_t_%s", hex);
		char sql[128];
		snprintf(sql, sizeof sql, "CREATE DATABASE %s", db->dbname);
		pg_admin_exec(sql);
		const char *host = getenv("AWOOOP_TEST_PG_HOST");
		const char *port = getenv("AWOOOP_TEST_PG_PORT");
		snprintf(db->owner_url, sizeof db->owner_url, "postgresql://postgres@%s:%s/%s",
			 host, port, db->dbname);
		snprintf(db->url, sizeof db->url, "postgresql://awooop_app@%s:%s/%s", host, port,
			 db->dbname);
		aw_store_opts o = {.pool_size = 1};
		if (aw_store_open(db->owner_url, &o, &s, &err) ||
		    aw_store_migrate(s, "awooop_app", &err))
			die("migrate", err.msg);
		aw_store_close(s);
	} else if (strcmp(backend, "sqlite") == 0) {
		snprintf(db->path, sizeof db->path, "/tmp/aw-test-%s.db", hex);
		snprintf(db->url, sizeof db->url, "sqlite:%s", db->path);
		aw_store_opts o = {.pool_size = 1, .auto_migrate = 1};
		if (aw_store_open(db->url, &o, &s, &err))
			die("sqlite open", err.msg);
		aw_store_close(s);
	} else {
		die("backend", "must be sqlite or postgres");
	}
}

aw_store *aw_test_store_open(const aw_test_db *db)
{
	aw_error err = {0};
	aw_store *s = NULL;
	aw_store_opts o = {.pool_size = 8};
	if (aw_store_open(db->url, &o, &s, &err))
		die("store open", err.msg);
	return s;
}

void aw_test_db_drop(aw_test_db *db)
{
	if (db->pg) {
		char sql[128];
		snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", db->dbname);
		pg_admin_exec(sql);
	} else if (db->path[0]) {
		char p[300];
		unlink(db->path);
		snprintf(p, sizeof p, "%s-wal", db->path);
		unlink(p);
		snprintf(p, sizeof p, "%s-shm", db->path);
		unlink(p);
	}
}

PGconn *aw_test_pg_owner(const aw_test_db *db)
{
	PGconn *c = PQconnectdb(db->owner_url);
	if (PQstatus(c) != CONNECTION_OK)
		die("owner connect", PQerrorMessage(c));
	return c;
}

void aw_test_audit_rows(const char *project, const char *action, int limit, aw_audit_row **rows,
			int *n)
{
	aw_ctx ctx;
	aw_test_ctx(&ctx, project, AW_SCOPE_PROJECT_ADMIN, "auditor");
	aw_error err = {0};
	aw_txn *t = NULL;
	*rows = NULL;
	*n = 0;
	assert_int_equal(aw_store_begin(aw_fx.s, &ctx, AW_TXN_READ, &t, &err), AW_OK);
	assert_int_equal(aw_store_audit_list(t, 0, action, "", limit, rows, n, &err), AW_OK);
	aw_store_rollback(t);
}

void aw_test_ctx(aw_ctx *ctx, const char *project, aw_scope scope, const char *principal)
{
	aw_ctx_system(ctx, project);
	ctx->scope = scope;
	snprintf(ctx->principal, sizeof ctx->principal, "%s", principal);
}

static int port_in_use(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int used = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
	close(fd);
	return used;
}

void aw_test_redis_init(aw_test_redis *r)
{
	memset(r, 0, sizeof *r); /* secure and its fields off unless asked */
	for (int tries = 0; tries < 100; tries++) {
		uint8_t rnd[2];
		aw_random_bytes(rnd, sizeof rnd);
		/* below the kernel's ephemeral range (32768+), where a client
		 * socket may hold a port that a connect probe reports free */
		r->port = 20000 + (rnd[0] << 8 | rnd[1]) % 12000;
		if (!port_in_use(r->port))
			break;
	}
	snprintf(r->url, sizeof r->url, "redis://127.0.0.1:%d", r->port);
	snprintf(r->dir, sizeof r->dir, "/tmp/aw-test-redis-%d", r->port);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "mkdir -p %s", r->dir);
	if (system(cmd) != 0)
		die("redis dir", r->dir);
}

/* A CA named name under dir, and a certificate it signs for 127.0.0.1 and
 * localhost (name-server.pem, name-server.key). */
static void make_ca(const char *dir, const char *name)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd,
		 "cd %s && openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=%s-ca"
		 " -keyout %s-ca.key -out %s-ca.pem 2>/dev/null"
		 " && openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1"
		 " -keyout %s-server.key -out %s-server.csr 2>/dev/null"
		 " && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' >%s-san.ext"
		 " && openssl x509 -req -in %s-server.csr -CA %s-ca.pem -CAkey %s-ca.key"
		 " -CAcreateserial -days 2 -extfile %s-san.ext -out %s-server.pem 2>/dev/null",
		 dir, name, name, name, name, name, name, name, name, name, name, name);
	if (system(cmd) != 0)
		die("openssl", "could not make the test certificates");
}

void aw_test_redis_secure(aw_test_redis *r)
{
	r->secure = 1;
	for (int tries = 0; tries < 100; tries++) {
		uint8_t rnd[2];
		aw_random_bytes(rnd, sizeof rnd);
		r->tls_port = 20000 + (rnd[0] << 8 | rnd[1]) % 12000;
		if (r->tls_port != r->port && !port_in_use(r->tls_port))
			break;
	}
	uint8_t rnd[8];
	aw_random_bytes(rnd, sizeof rnd);
	snprintf(r->password, sizeof r->password, "canary-redis-%02x%02x%02x%02x%02x%02x", rnd[0],
		 rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
	make_ca(r->dir, "test");
	snprintf(r->ca, sizeof r->ca, "%s/test-ca.pem", r->dir);
	snprintf(r->url, sizeof r->url, "rediss://app:%s@127.0.0.1:%d?tls_ca=%s", r->password,
		 r->tls_port, r->ca);
	snprintf(r->plain_url, sizeof r->plain_url, "redis://app:%s@127.0.0.1:%d", r->password,
		 r->port);
}

void aw_test_redis_other_ca(const aw_test_redis *r, char *ca_out, size_t cap)
{
	make_ca(r->dir, "other");
	snprintf(ca_out, cap, "%s/other-ca.pem", r->dir);
}

void aw_test_redis_start(aw_test_redis *r)
{
	char cmd[1536];
	int o = snprintf(cmd, sizeof cmd,
			 "redis-server --port %d --bind 127.0.0.1 --save '' --appendonly no"
			 " --daemonize yes --dir %s --pidfile %s/redis.pid --logfile %s/log",
			 r->port, r->dir, r->dir, r->dir);
	if (r->secure)
		snprintf(cmd + o, sizeof cmd - (size_t)o,
			 " --user default off --user app on '>%s' '~*' '&*' +@all"
			 " --tls-port %d --tls-cert-file %s/test-server.pem"
			 " --tls-key-file %s/test-server.key --tls-ca-cert-file %s"
			 " --tls-auth-clients optional",
			 r->password, r->tls_port, r->dir, r->dir, r->ca);
	/* the suite's first Redis not starting means there is none to be had
	 * here: a skip (which `make test` refuses); a restart that fails later
	 * is a failure */
	static atomic_int started;
	if (system(cmd) != 0) {
		if (!atomic_load(&started))
			aw_test_skip_suite(
				"needs redis-server on PATH to start a private Redis "
				"(scripts/deps.sh --test installs it): it did not start");
		die("redis-server", "did not start");
	}
	for (int i = 0; i < 100; i++) {
		aw_error err;
		if (aw_redis_ping(r->url, 200, &err) == AW_OK) {
			atomic_store(&started, 1);
			return;
		}
		usleep(20000);
	}
	if (!atomic_load(&started))
		aw_test_skip_suite(
			"its private redis-server (port %d) is not answering: see %s/log", r->port,
			r->dir);
	die("redis-server", "not answering");
}

void aw_test_redis_kill(aw_test_redis *r)
{
	char path[128], buf[32] = "";
	snprintf(path, sizeof path, "%s/redis.pid", r->dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(buf, sizeof buf, f))
		kill(atoi(buf), SIGKILL);
	fclose(f);
	unlink(path);
	usleep(100000);
}

void aw_test_redis_cleanup(aw_test_redis *r)
{
	aw_test_redis_kill(r);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", r->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", r->dir);
}

void aw_test_raw_sql(const aw_test_db *db, const char *sql)
{
	char buf[4096];
	size_t o = 0;
	for (const char *p = sql; *p && o < sizeof buf - 16; p++) {
		if (p[0] == '%' && p[1] == 'T') {
			if (db->pg) {
				memcpy(buf + o, "awooop.", 7);
				o += 7;
			}
			p++;
		} else {
			buf[o++] = *p;
		}
	}
	buf[o] = '\0';
	if (db->pg) {
		PGconn *c = aw_test_pg_owner(db);
		PGresult *r = PQexec(c, buf);
		if (PQresultStatus(r) != PGRES_COMMAND_OK)
			die(buf, PQerrorMessage(c));
		PQclear(r);
		PQfinish(c);
	} else {
		sqlite3 *h = NULL;
		char *msg = NULL;
		/* the process under test may be writing (a worker, the reaper):
		 * wait for its lock as the store's own connections do */
		if (sqlite3_open(db->path, &h) != SQLITE_OK ||
		    sqlite3_busy_timeout(h, 10000) != SQLITE_OK ||
		    sqlite3_exec(h, buf, NULL, NULL, &msg) != SQLITE_OK)
			die(buf, msg);
		sqlite3_close(h);
	}
}

/* ---- the store fixture */

aw_test_fixture aw_fx = {.backend = "sqlite"};

int aw_test_store_up(const char *const *projects)
{
	/* the migrations' and projects' info lines kept out of the output, so
	 * that a failure's messages come near its start (CI shows the start) */
	aw_log_set_level(AW_LOG_WARN);
	aw_test_db_create(aw_fx.backend, &aw_fx.db);
	aw_fx.s = aw_test_store_open(&aw_fx.db);
	aw_ctx admin;
	aw_test_ctx(&admin, NULL, AW_SCOPE_PLATFORM_ADMIN, "root");
	aw_error err = {0};
	for (int i = 0; projects && projects[i]; i++)
		if (aw_project_create(aw_fx.s, &admin, projects[i], NULL, &err)) {
			fprintf(stderr, "fixture: project %s: %s\n", projects[i], err.msg);
			return -1;
		}
	aw_log_set_level(AW_LOG_INFO);
	return 0;
}

void aw_test_store_down(void)
{
	aw_store_close(aw_fx.s);
	aw_fx.s = NULL;
	aw_test_db_drop(&aw_fx.db);
}

/* ---- running cases, skips, waiting */

static atomic_int skipped_cases;

void aw_test_skip_suite(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("SKIP: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	fflush(stdout);
	exit(AW_TEST_SKIP_RC);
}

void aw_test_skipped_case(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("SKIP: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	atomic_fetch_add(&skipped_cases, 1);
}

/* 1 when name matches one of the comma-separated globs of pattern, with or
 * without its "test_" prefix. */
static int case_matches(const char *pattern, const char *name)
{
	const char *bare = strncmp(name, "test_", 5) ? name : name + 5;
	for (const char *p = pattern; *p;) {
		size_t n = strcspn(p, ",");
		char one[256];
		if (n && n < sizeof one) {
			memcpy(one, p, n);
			one[n] = '\0';
			if (!fnmatch(one, name, 0) || !fnmatch(one, bare, 0))
				return 1;
		}
		p += n + (p[n] == ',');
	}
	return 0;
}

int aw_test_run_cases(const char *suite, const char *cases, const struct CMUnitTest *tests,
		      size_t n, CMFixtureFunction setup, CMFixtureFunction teardown)
{
	if (!cases || !*cases)
		cases = getenv("AW_TEST_CASE");
	if (cases && !strcmp(cases, "--list")) {
		for (size_t i = 0; i < n; i++)
			printf("%s\n", tests[i].name);
		return 0;
	}
	struct CMUnitTest *run = malloc(sizeof *run * (n ? n : 1));
	if (!run)
		return 1;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!cases || !*cases || case_matches(cases, tests[i].name))
			run[k++] = tests[i];
	if (!k) {
		fprintf(stderr, "%s: no case matches '%s'; the cases:\n", suite, cases);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, "  %s\n", tests[i].name);
		free(run);
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT); /* once, before any thread: as main() does */
	int failed = _cmocka_run_group_tests(suite, run, k, setup, teardown);
	free(run);
	if (failed)
		return 1;
	if (atomic_load(&skipped_cases)) {
		fprintf(stderr, "%s: %d case(s) skipped: reported as a skip, not a pass\n", suite,
			atomic_load(&skipped_cases));
		return AW_TEST_SKIP_RC;
	}
	return 0;
}

int aw_test_run_group(int argc, char **argv, const char *suite, const struct CMUnitTest *tests,
		      size_t n, CMFixtureFunction setup, CMFixtureFunction teardown)
{
	if (argc > 1)
		aw_fx.backend = argv[1];
	char name[96];
	snprintf(name, sizeof name, "%s (%s)", suite, aw_fx.backend);
	return aw_test_run_cases(name, argc > 2 ? argv[2] : NULL, tests, n, setup, teardown);
}

double aw_test_timeout_scale(void)
{
	const char *s = getenv("AW_TEST_TIMEOUT_SCALE");
	double v = s ? strtod(s, NULL) : 0;
	if (v > 0)
		return v;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return 3;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
	return 3;
#endif
#endif
	return 1;
}

/* the real monotonic clock: a test may shift aw_clock_mono_ns */
static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int aw_test_wait_until(int (*cond)(void *ud), void *ud, int timeout_ms)
{
	int64_t deadline = mono_ms() + (int64_t)(timeout_ms * aw_test_timeout_scale());
	int nap = 2;
	for (;;) {
		if (cond(ud))
			return 1;
		int64_t left = deadline - mono_ms();
		if (left <= 0)
			return cond(ud) ? 1 : 0;
		int ms = nap < left ? nap : (int)left;
		struct timespec d = {ms / 1000, (long)(ms % 1000) * 1000000L};
		nanosleep(&d, NULL);
		nap = nap * 2 > 50 ? 50 : nap * 2;
	}
}
