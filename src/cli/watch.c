/*
 * watch.c - `awooop watch`: runs a worker revision cache against the store
 * (and Redis when given) and prints one JSON line per revision change it
 * observes: {"ts_ns", "revision_id", "source": bus|fallback|guard|resync}.
 * It makes guarded calls at --calls-per-sec, like a worker before each LLM
 * call; --call-log records (start_ns, revision used) of every call, which the
 * convergence benchmark checks for guard violations.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "awooop/fleet.h"
#include "awooop/log.h"
#include "awooop/policy.h"
#include "cli.h"

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static int64_t wall_ns(void)
{
	return aw_clock_wall_ns();
}

typedef struct {
	const char *family, *cid;
} watch_key;

static void on_change(void *ud, const char *project, const char *family, const char *cid,
		      const char *rev, const char *source)
{
	const watch_key *k = ud;
	(void)project;
	if (strcmp(family, k->family) || strcmp(cid, k->cid))
		return;
	printf("{\"ts_ns\":%lld,\"revision_id\":\"%s\",\"source\":\"%s\"}\n", (long long)wall_ns(),
	       rev, source);
	fflush(stdout);
}

int cmd_watch(int argc, char **argv)
{
	aw_opt opts[] = {
		{"project", "AWOOOP_PROJECT", NULL, 0, "project", NULL},
		{"family", NULL, "policy_routing", 0, "contract family", NULL},
		{"contract", NULL, NULL, 0, "contract id", NULL},
		{"db", "AWOOOP_DB", "sqlite:./var/awooop.db", 0, "store URL", NULL},
		{"redis", "AWOOOP_REDIS", NULL, 0,
		 "redis[s]://[USER:PASSWORD@]HOST:PORT[/DB][?tls_ca=...] for invalidations", NULL},
		{"mode", NULL, "bounded", 0, "strict|bounded", NULL},
		{"max-staleness-ms", NULL, "1000", 0, "bounded guard staleness", NULL},
		{"interval-ms", NULL, "30000", 0, "fallback re-check (families but channel_event)",
		 NULL},
		{"calls-per-sec", NULL, "50", 0, "guarded calls per second", NULL},
		{"duration-s", NULL, "0", 0, "stop after this many seconds (0: on SIGINT/SIGTERM)",
		 NULL},
		{"call-log", NULL, NULL, 0, "file for (call start ns, revision) lines", NULL},
		{"publish-keys", "AWOOOP_PUBLISH_KEYS_FILE", NULL, 0,
		 "key file to verify signatures", NULL},
		{"fleet-report-ms", "AWOOOP_FLEET_REPORT_MS", "5000", 0,
		 "report the revision served this often (the convergence endpoint)", NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	const char *pos[1];
	int npos = 0;
	int rc = cli_parse(
		argc, argv, opts, pos, &npos,
		"usage: awooop watch --project P --family F --contract C [--db URL]\n"
		"                    [--redis URL] [--mode strict|bounded] [options]\n\n"
		"Prints {\"ts_ns\",\"revision_id\",\"source\"} whenever the active revision\n"
		"it observes changes, and reports it to the fleet (the contract's\n"
		"convergence endpoint counts this process). Verifies signatures with AWOOOP_PUBLISH_KEYS or\n"
		"--publish-keys (the embedded default reads var/publish-keys.json).\n"
		"It reads the store (and Redis) directly; --project defaults to AWOOOP_PROJECT.\n\n"
		"Example:\n"
		"  awooop watch --project acme --contract default --duration-s 60");
	if (rc)
		return rc < 0 ? 0 : rc;
	const char *project = cli_get(opts, "project"), *cid = cli_get(opts, "contract");
	const char *mode = cli_get(opts, "mode");
	if (!project || !cid || (strcmp(mode, "strict") && strcmp(mode, "bounded")))
		return cli_fail(AW_E_USAGE, "--project and --contract are required; --mode is"
					    " strict or bounded");
	long staleness, interval, duration, report;
	if ((rc = cli_opt_long(opts, "fleet-report-ms", 100, 600000, &report)) ||
	    (rc = cli_opt_long(opts, "max-staleness-ms", 1, 3600000, &staleness)) ||
	    (rc = cli_opt_long(opts, "interval-ms", 10, 86400000, &interval)) ||
	    (rc = cli_opt_long(opts, "duration-s", 0, 365L * 86400, &duration)))
		return rc;
	aw_log_set_level(AW_LOG_WARN);
	aw_error err = {0};
	aw_store *s = NULL;
	aw_keyring *kr = NULL;
	aw_contracts *c = NULL;
	aw_bus *bus = NULL;
	aw_policy_cache *pc = NULL;
	aw_fleet *fleet = NULL;
	aw_store_opts so = {.pool_size = 2};
	const char *db = cli_get(opts, "db");
	aw_err e = aw_store_open(db, &so, &s, &err);
	if (!e)
		e = cli_keyring("publish", db, cli_get(opts, "publish-keys"), 0, &kr, &err);
	if (!e && !kr) /* without keys every revision would fail verification */
		e = aw_fail(&err, AW_E_CONTRACT_NO_KEY,
			    "set AWOOOP_PUBLISH_KEYS or --publish-keys to verify signatures");
	if (!e)
		e = aw_contracts_new(kr, &c, &err);
	if (!e && cli_get(opts, "redis"))
		e = aw_bus_open(cli_get(opts, "redis"), &bus, &err);
	aw_policy_opts po = {.mode = strcmp(mode, "strict") ? AW_GUARD_BOUNDED : AW_GUARD_STRICT,
			     .max_staleness_ms = (int)staleness,
			     .interval_ms = (int)interval};
	if (!e)
		e = aw_policy_cache_new(s, c, bus, &po, &pc, &err);
	watch_key key = {cli_get(opts, "family"), cid};
	FILE *log = NULL;
	if (!e && cli_get(opts, "call-log") && !(log = fopen(cli_get(opts, "call-log"), "w")))
		e = aw_fail(&err, AW_E_CONFIG, "cannot write --call-log");
	if (e)
		goto out;
	aw_policy_on_change(pc, on_change, &key);
	/* the fleet listens second: the change line is printed at the moment
	 * the fleet records (bench/convergence compares the two) */
	aw_fleet_opts fo = {.store = s, .policy = pc, .role = "watch", .report_ms = (int)report};
	if ((e = aw_fleet_start(&fo, &fleet, &err)))
		goto out;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	char *cend = NULL;
	double cps = strtod(cli_get(opts, "calls-per-sec"), &cend);
	if (*cend || !(cps > 0 && cps <= 100000)) {
		e = aw_fail(&err, AW_E_CONFIG, "--calls-per-sec must be a number in (0, 100000]");
		goto out;
	}
	int64_t gap = cps > 0 ? (int64_t)(1e9 / cps) : 20000000LL;
	int64_t end = duration * 1000000000LL;
	int64_t t0 = wall_ns(), next = t0;
	aw_ctx ctx;
	aw_ctx_system(&ctx, project);
	snprintf(ctx.principal, sizeof ctx.principal, "watch");
	while (!stopping && (!end || wall_ns() - t0 < end)) {
		int64_t start = wall_ns();
		aw_policy pol;
		aw_error cerr;
		aw_err ce = aw_policy_effective(pc, &ctx, key.family, cid, &pol, &cerr);
		if (log)
			fprintf(log, "%lld %s\n", (long long)start, ce ? "-" : pol.revision_id);
		if (!ce)
			aw_policy_release(&pol);
		next += gap;
		int64_t sl = next - wall_ns();
		if (sl > 0) {
			struct timespec ts = {sl / 1000000000LL, sl % 1000000000LL};
			nanosleep(&ts, NULL);
		} else {
			next = wall_ns();
		}
	}
	aw_policy_stats st;
	aw_policy_get_stats(pc, &st);
	fprintf(stderr,
		"{\"calls\":%llu,\"store_reads\":%llu,\"reloads\":%llu,\"bus_events\":%llu,"
		"\"fallback_checks\":%llu,\"resyncs\":%llu,\"process_id\":\"%s\"}\n",
		(unsigned long long)st.calls, (unsigned long long)st.store_reads,
		(unsigned long long)st.reloads, (unsigned long long)st.bus_events,
		(unsigned long long)st.fallback_checks, (unsigned long long)st.resyncs,
		aw_fleet_process_id(fleet));
out:
	if (log)
		fclose(log);
	aw_fleet_stop(fleet);
	aw_policy_cache_free(pc);
	aw_bus_close(bus);
	aw_contracts_free(c);
	aw_keyring_free(kr);
	aw_store_close(s);
	return e ? cli_fail(e, err.msg) : 0;
}
