/*
 * support.h - test helpers: a fresh store of either backend, each in its own
 * SQLite file or PostgreSQL database (so tests can run in parallel), and a
 * superuser libpq connection for tests that inspect PostgreSQL directly.
 */
#ifndef AW_TEST_SUPPORT_H
#define AW_TEST_SUPPORT_H

#include <libpq-fe.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "awooop/store.h"
#include "awooop/store/audit.h"

typedef struct {
	int pg;		     /* 1 = postgres, 0 = sqlite */
	char dbname[64];     /* postgres database (fresh per call) */
	char url[512];	     /* URL the service uses (postgres: the app role) */
	char owner_url[512]; /* postgres: superuser URL to the same database */
	char path[256];	     /* sqlite file */
} aw_test_db;

/* backend: "sqlite" or "postgres". Creates and migrates a fresh store; aborts
 * the test binary on failure (with the reason). */
void aw_test_db_create(const char *backend, aw_test_db *db);
aw_store *aw_test_store_open(const aw_test_db *db);
void aw_test_db_drop(aw_test_db *db);
/* Superuser connection to db (postgres only). */
PGconn *aw_test_pg_owner(const aw_test_db *db);
/* Runs SQL directly in db's database (postgres as the superuser, sqlite on the
 * file), as someone with direct access would; fails the test on error. %T in
 * sql becomes the schema prefix ("awooop." on postgres, "" on sqlite). */
void aw_test_raw_sql(const aw_test_db *db, const char *sql);
/* A platform-admin ctx and a plain system ctx for project p. */
void aw_test_ctx(aw_ctx *ctx, const char *project, aw_scope scope, const char *principal);
/* The audit records of project in the fixture's store (action "" = all, at
 * most limit, oldest first); fails the test when they cannot be read. Free
 * with aw_audit_rows_free. */
void aw_test_audit_rows(const char *project, const char *action, int limit, aw_audit_row **rows,
			int *n);

/* ---- the store fixture of a backend test binary (`test_x sqlite|postgres`):
 * a fresh database of the backend named on the command line, created before
 * the group and dropped after. */
typedef struct {
	const char *backend; /* argv[1], default "sqlite" */
	aw_test_db db;
	aw_store *s;
} aw_test_fixture;
extern aw_test_fixture aw_fx;
/* Creates and opens the store, then creates the projects (NULL-ended, may be
 * NULL) as a platform admin. 0 on success (cmocka group setup convention). */
int aw_test_store_up(const char *const *projects);
void aw_test_store_down(void);
/* main() of a backend test binary (`test_x sqlite|postgres [CASES]`): takes
 * the backend from argv[1] and runs the group as "SUITE (backend)", only the
 * cases CASES (argv[2], else $AW_TEST_CASE) names: comma-separated globs (*
 * and ?) matched against each case's name with or without its "test_"
 * prefix; "--list" prints the names. A pattern no case matches is an error
 * (exit 2), never an empty pass. The cases of a suite share its store: one
 * that builds on an earlier case needs that case in the pattern too. */
int aw_test_run_group(int argc, char **argv, const char *suite, const struct CMUnitTest *tests,
		      size_t n, CMFixtureFunction setup, CMFixtureFunction teardown);
#define AW_TEST_MAIN(suite, tests, setup, teardown)                                            \
	aw_test_run_group(argc, argv, suite, tests, sizeof(tests) / sizeof((tests)[0]), setup, \
			  teardown)
/* The same for a binary without a backend (`test_x [CASES]`): cases is
 * argv's pattern (NULL: $AW_TEST_CASE). */
int aw_test_run_cases(const char *suite, const char *cases, const struct CMUnitTest *tests,
		      size_t n, CMFixtureFunction setup, CMFixtureFunction teardown);
#define AW_TEST_MAIN_PLAIN(suite, tests, setup, teardown)          \
	aw_test_run_cases(suite, argc > 1 ? argv[1] : NULL, tests, \
			  sizeof(tests) / sizeof((tests)[0]), setup, teardown)

/* ---- skips: a suite that cannot run here says why and exits
 * AW_TEST_SKIP_RC, which CTest reports as skipped (SKIP_RETURN_CODE) - never
 * as passed; `make test` fails on any skip unless AWOOOP_TEST_ALLOW_SKIP=1. */
#define AW_TEST_SKIP_RC 77
/* Ends the binary at once as skipped ("SKIP: <why>" on stderr). */
__attribute__((noreturn, format(printf, 1, 2))) void aw_test_skip_suite(const char *fmt, ...);
/* Skips the running case, saying why: the binary then exits AW_TEST_SKIP_RC
 * rather than 0 when no case failed. */
#define aw_test_skip(...)                          \
	do {                                       \
		aw_test_skipped_case(__VA_ARGS__); \
		skip();                            \
	} while (0)
__attribute__((format(printf, 1, 2))) void aw_test_skipped_case(const char *fmt, ...);

/* ---- waiting for something asynchronous: calls cond(ud) at once, then
 * every few milliseconds (backing off to 50 ms), until it returns non-zero
 * (1) or timeout_ms pass on the monotonic clock (0, after a last call). The
 * timeout is multiplied by $AW_TEST_TIMEOUT_SCALE (default 1; 3 in a
 * sanitizer build). Use it instead of a sleep before an assertion; a test
 * that measures time on purpose keeps its sleeps. */
/* That multiplier: a bound on how fast the product reacts (a kill within
 * 0.5 s) holds as written in a normal build and this many times over under
 * a sanitizer, whose code runs slower. */
double aw_test_timeout_scale(void);
int aw_test_wait_until(int (*cond)(void *ud), void *ud, int timeout_ms);

/* A private redis-server on a random port, for tests that kill it. */
typedef struct {
	int port;
	char url[512], dir[64];
	/* secure: an ACL user (the default user off) on port, TLS on tls_port
	 * with a CA the test made; url is rediss://, plain_url redis:// with the
	 * user's password */
	int secure, tls_port;
	char plain_url[256], password[64], ca[128];
} aw_test_redis;
void aw_test_redis_init(aw_test_redis *r);
void aw_test_redis_start(aw_test_redis *r);
/* Makes r secure (after init, before start): a CA and a server certificate
 * for 127.0.0.1 made with openssl, a canary password. */
void aw_test_redis_secure(aw_test_redis *r);
/* A second CA (and a certificate it signed for 127.0.0.1) under r->dir:
 * its CA file's path into ca_out; a client presenting it is refused. */
void aw_test_redis_other_ca(const aw_test_redis *r, char *ca_out, size_t cap);
void aw_test_redis_kill(aw_test_redis *r);
/* Kills it if running and removes its directory. */
void aw_test_redis_cleanup(aw_test_redis *r);

#endif
