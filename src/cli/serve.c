/*
 * serve.c - `awooop serve` and `awooop migrate`.
 *
 * serve opens the store (the SQLite default migrates itself; PostgreSQL must
 * have been migrated by its owner), bootstraps the platform project and its
 * first platform-admin key, starts the HTTP API, and waits for SIGINT/SIGTERM
 * to stop in order. Background loops (relay, workers) join here as they land.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "awooop/agent.h"
#include "awooop/approval.h"
#include "awooop/channel.h"
#include "awooop/contract.h"
#include "awooop/egress.h"
#include "awooop/fleet.h"
#include "awooop/http.h"
#include "awooop/llm.h"
#include "awooop/mcp.h"
#include "awooop/otel.h"
#include "awooop/relay.h"
#include "awooop/run.h"
#include "awooop/log.h"
#include "awooop/redaction.h"
#include "awooop/tenancy.h"
#include "awooop/secret.h"
#include "cli.h"

/* For sqlite:PATH, creates PATH's directory (one level) if missing. */
static void ensure_sqlite_dir(const char *url)
{
	if (strncmp(url, "sqlite:", 7) != 0)
		return;
	char dir[1024];
	snprintf(dir, sizeof dir, "%s", url + 7);
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return;
	*slash = '\0';
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		fprintf(stderr, "awooop: cannot create %s: %s\n", dir, strerror(errno));
}

static int set_log_level(const char *lvl)
{
	aw_log_level l;
	if (aw_log_parse_level(lvl, &l) != 0)
		return aw_cli_fail(AW_E_CONFIG, "--log-level must be debug, info, warn or error");
	aw_log_set_level(l);
	return 0;
}

/* What SIGHUP reloads: the API's TLS certificate and key (connections made
 * before keep theirs) and the contract publish keys (a sign or verify in
 * flight keeps the ring it started with: rings replaced are freed at exit).
 * A bad file keeps the old material and says why. */
typedef struct {
	aw_http *http;
	aw_contracts *contracts;
	aw_approvals *approvals;
	const char *db, *keys_file, *approval_keys_file;
	aw_keyring *old[64];
	int nold;
} reloadable;

static void reload(reloadable *rl)
{
	aw_error err = {0};
	aw_keyring *keys = NULL;
	if (rl->http && aw_http_reload(rl->http, &err))
		aw_log(AW_LOG_ERROR, NULL, "TLS reload failed; the old certificate stays", "detail",
		       err.msg, NULL);
	else if (rl->http)
		aw_log(AW_LOG_INFO, NULL, "TLS material reloaded (SIGHUP)", NULL);
	if (rl->nold == 64)
		aw_log(AW_LOG_ERROR, NULL, "publish keys reloaded too often; restart to reload",
		       NULL);
	else if (aw_cli_keyring("publish", rl->db, rl->keys_file, 0, &keys, &err))
		aw_log(AW_LOG_ERROR, NULL, "publish key reload failed; the old keys stay", "detail",
		       err.msg, NULL);
	else {
		rl->old[rl->nold++] = (aw_keyring *)aw_contracts_set_keyring(rl->contracts, keys);
		aw_log(AW_LOG_INFO, NULL, "publish keys reloaded (SIGHUP)", NULL);
	}
	if (!rl->approvals || rl->nold == 64)
		return;
	if (aw_cli_keyring("approval", rl->db, rl->approval_keys_file, 0, &keys, &err))
		aw_log(AW_LOG_ERROR, NULL, "approval key reload failed; the old keys stay",
		       "detail", err.msg, NULL);
	else {
		rl->old[rl->nold++] = (aw_keyring *)aw_approvals_set_keyring(rl->approvals, keys);
		aw_log(AW_LOG_INFO, NULL, "approval keys reloaded (SIGHUP)", NULL);
	}
}

/* `awooop serve --options-markdown` (hidden): the options table below as a
 * Markdown table, for docs/configuration.md (scripts/gen-config-doc.py). */
static void md_text(const char *s)
{
	for (; s && *s; s++) {
		if (strchr("|*<>\\`", *s))
			putchar('\\');
		putchar(*s);
	}
}

static void print_options_markdown(const aw_opt *opts)
{
	printf("| flag | environment variable | default | meaning |\n|---|---|---|---|\n");
	for (const aw_opt *o = opts; o->name; o++) {
		printf("| `--%s` | ", o->name);
		printf(o->env ? "`%s`" : "-", o->env ? o->env : "");
		printf(" | ");
		printf(o->def ? "`%s`" : "-", o->def ? o->def : "");
		printf(" | ");
		md_text(o->help);
		printf(" |\n");
	}
}

/* What the serving line says: the listen address with the port bound (a :0
 * names the kernel's choice) and the console's URL, a wildcard address
 * ("0.0.0.0", "[::]", none) read as this host's loopback. Host names are
 * at most 253 bytes: both fit their buffers (AW_LISTEN_TEXT_MAX). */
#define AW_LISTEN_TEXT_MAX 320
static void console_url(const char *l, int port, int tls, char *listen, size_t nl, char *url,
			size_t nu)
{
	const char *colon = strrchr(l, ':');
	int hl = colon ? (int)(colon - l) : (int)strlen(l);
	snprintf(listen, nl, "%.*s:%d", hl, l, port);
	const char *host = l;
	if (hl == 0 || (hl == 7 && !strncmp(l, "0.0.0.0", 7))) {
		host = "127.0.0.1";
		hl = 9;
	} else if (hl == 4 && !strncmp(l, "[::]", 4)) {
		host = "[::1]";
		hl = 5;
	}
	snprintf(url, nu, "%s://%.*s:%d/console/", tls ? "https" : "http", hl, host, port);
}

int aw_cmd_serve(int argc, char **argv)
{
	aw_opt opts[] = {
		{"db", "AWOOOP_DB", "sqlite:./var/awooop.db", 0,
		 "store URL: sqlite:PATH or postgresql://...", NULL},
		{"listen", "AWOOOP_LISTEN", "127.0.0.1:8080", 0,
		 "HTTP listen address HOST:PORT: an IPv4 address, [an IPv6 one] ([::]: every"
		 " address, IPv4 too) or a host name (its first address, IPv4 first), e.g."
		 " [::1]:8080, localhost:8080; port 0: any free one",
		 NULL},
		{"tls-cert", "AWOOOP_TLS_CERT", NULL, 0,
		 "PEM certificate chain: the API speaks HTTPS (TLS 1.2+); re-read on SIGHUP", NULL},
		{"tls-key", "AWOOOP_TLS_KEY", NULL, 0, "PEM private key of --tls-cert", NULL},
		{"tls-client-ca", "AWOOOP_TLS_CLIENT_CA", NULL, 0,
		 "PEM CA: every connection must present a client certificate it signed", NULL},
		{"redis", "AWOOOP_REDIS", NULL, 0,
		 "redis[s]://[USER:PASSWORD@]HOST:PORT[/DB][?tls_ca=...] (cluster shape; optional)",
		 NULL},
		{"role", "AWOOOP_ROLE", "all", 0, "all|api|relay|worker|hub", NULL},
		{"body-limit", "AWOOOP_BODY_LIMIT", "1048576", 0, "max request body bytes", NULL},
		{"body-memory", "AWOOOP_BODY_MEMORY", "67108864", 0,
		 "bytes of request bodies held at once by all requests (503 past it)", NULL},
		{"project-body-memory", "AWOOOP_PROJECT_BODY_MEMORY", NULL, 0,
		 "bytes of request bodies one project's requests may hold at once: N, or "
		 "N,PROJECT=M,... (default a quarter of --body-memory, at least --body-limit); "
		 "past it 429 E-REQ-014",
		 NULL},
		{"anon-body-memory", "AWOOOP_ANON_BODY_MEMORY", "0", 0,
		 "bytes of request bodies the requests without a valid API key may hold at once "
		 "(0: a sixteenth of --body-memory, at least --body-limit); past it 429 E-REQ-015",
		 NULL},
		{"max-per-ip", "AWOOOP_MAX_PER_IP", "64", 0, "HTTP connections from one address",
		 NULL},
		{"http-threads", "AWOOOP_HTTP_THREADS", "8", 0, "HTTP event-loop threads", NULL},
		{"head-timeout-ms", "AWOOOP_HEAD_TIMEOUT_MS", "10000", 0,
		 "a request head must arrive whole within this (also the keep-alive idle limit)",
		 NULL},
		{"request-timeout-s", "AWOOOP_REQUEST_TIMEOUT_S", "30", 0,
		 "the body and the answer, from the end of the head", NULL},
		{"drain-s", "AWOOOP_DRAIN_S", "10", 0,
		 "on SIGTERM/SIGINT, requests in flight get this long to finish before they are "
		 "cut (event streams end at once; no new ones are taken)",
		 NULL},
		{"pool-size", "AWOOOP_POOL_SIZE", "8", 0, "store connections", NULL},
		{"project-pool", "AWOOOP_PROJECT_POOL", NULL, 0,
		 "store connections one project's requests may hold at once: N, or "
		 "N,PROJECT=M,... (default half the pool, at least 1); past it, after "
		 "a short wait, 429 E-STORE-007",
		 NULL},
		{"log-level", "AWOOOP_LOG_LEVEL", "info", 0, "debug|info|warn|error", NULL},
		{"relay-poll-ms", "AWOOOP_RELAY_POLL_MS", "1000", 0, "outbox relay safety-net poll",
		 NULL},
		{"worker-id", "AWOOOP_WORKER_ID", NULL, 0,
		 "run worker id (default host-pid-random)", NULL},
		{"concurrency", "AWOOOP_WORKER_CONCURRENCY", "4", 0, "run worker threads 1..256",
		 NULL},
		{"batch", "AWOOOP_WORKER_BATCH", "16", 0,
		 "runs one worker thread claims at once 1..1000", NULL},
		{"store-threads", "AWOOOP_WORKER_STORE_THREADS", "0", 0,
		 "worker threads claiming or driving a batch at once 0..256 (0: the CPUs, at least 2)",
		 NULL},
		{"host-store-threads", "AWOOOP_WORKER_HOST_STORE_THREADS", "0", 0,
		 "the same, counted across this user's worker processes on this host that serve the "
		 "same database -1..256 (0: the CPUs, -1: no host-wide count)",
		 NULL},
		{"heartbeat-ms", "AWOOOP_HEARTBEAT_MS", "5000", 0, "run lease heartbeat interval",
		 NULL},
		{"lease-ms", "AWOOOP_LEASE_MS", "30000", 0, "run lease length", NULL},
		{"worker-poll-ms", "AWOOOP_WORKER_POLL_MS", "1000", 0,
		 "idle worker safety-net poll", NULL},
		{"retry-base-ms", "AWOOOP_RETRY_BASE_MS", "1000", 0,
		 "retry backoff base (doubles per attempt, +-25% jitter)", NULL},
		{"retry-max-ms", "AWOOOP_RETRY_MAX_MS", "60000", 0, "retry backoff cap", NULL},
		{"publish-keys", "AWOOOP_PUBLISH_KEYS_FILE", NULL, 0,
		 "contract publish key file (embedded default: var/publish-keys.json)", NULL},
		{"approval-keys", "AWOOOP_APPROVAL_KEYS_FILE", NULL, 0,
		 "approval-token key file, same format (embedded default: var/approval-keys.json;"
		 " re-read on SIGHUP)",
		 NULL},
		{"approval-issuer", "AWOOOP_APPROVAL_ISSUER", "awooop", 0,
		 "the iss of approval tokens this process mints and accepts", NULL},
		{"llm-config", "AWOOOP_LLM_CONFIG", NULL, 0,
		 "LLM gateway upstreams: a JSON file {\"providers\": {...}} (see docs/guide/llm-gateway.md)",
		 NULL},
		{"llm-contract", "AWOOOP_LLM_CONTRACT", "default", 0,
		 "the policy_routing contract id every model call is routed by", NULL},
		{"llm-guard", "AWOOOP_LLM_GUARD", "bounded", 0,
		 "per-call policy guard: bounded (a snapshot at most --llm-staleness-ms old) or "
		 "strict (the store's active pointer on every call)",
		 NULL},
		{"llm-staleness-ms", "AWOOOP_LLM_STALENESS_MS", "1000", 0, "bounded guard's limit",
		 NULL},
		{"llm-timeout-s", "AWOOOP_LLM_TIMEOUT_S", "600", 0,
		 "a model call's whole life on the API (streams included)", NULL},
		{"llm-connect-ms", "AWOOOP_LLM_CONNECT_MS", "3000", 0, "upstream connect timeout",
		 NULL},
		{"llm-first-byte-ms", "AWOOOP_LLM_FIRST_BYTE_MS", "60000", 0,
		 "upstream first-byte timeout (a candidate's timeout_ms may shorten it, never lengthen it)",
		 NULL},
		{"llm-idle-ms", "AWOOOP_LLM_IDLE_MS", "30000", 0, "upstream stream idle timeout",
		 NULL},
		{"llm-project-inflight", "AWOOOP_LLM_PROJECT_INFLIGHT", NULL, 0,
		 "model calls (streams included) one project may have in flight in this process: "
		 "N, or N,PROJECT=M,... (default 64, a quarter of an upstream host's 256 "
		 "connections); past it 429 E-LLM-009",
		 NULL},
		{"llm-emergency-share", "AWOOOP_LLM_EMERGENCY_SHARE", NULL, 0,
		 "the percent of the emergency model's daily cap one project may use: N, or "
		 "N,PROJECT=M,... (default 50); the cap's total still holds across processes",
		 NULL},
		{"breaker-failures", "AWOOOP_BREAKER_FAILURES", "5", 0,
		 "consecutive upstream failures that open its circuit", NULL},
		{"breaker-cooldown-ms", "AWOOOP_BREAKER_COOLDOWN_MS", "10000", 0,
		 "open circuit -> one half-open probe after this", NULL},
		{"budget-lease-ms", "AWOOOP_BUDGET_LEASE_MS", "660000", 0,
		 "a token reservation whose process died is reaped after this (and every "
		 "quarter of it the reaper looks)",
		 NULL},
		{"egress-allow-private", "AWOOOP_EGRESS_ALLOW_PRIVATE", NULL, 0,
		 "projects (comma-separated, or *) whose http run steps and MCP upstreams may "
		 "reach loopback and private addresses (link-local and metadata: never)",
		 NULL},
		{"mcp-contract", "AWOOOP_MCP_CONTRACT", "default", 0,
		 "the mcp_tool contract id that lists a project's tool servers", NULL},
		{"secrets-dir", "AWOOOP_SECRETS_DIR", NULL, 0,
		 "tenants' file: secret references (run steps, MCP upstreams, bots) resolve in "
		 "DIR/<project>/ (env: ones in AWOOOP_T_<PROJECT>__NAME)",
		 NULL},
		{"mcp-secrets-dir", "AWOOOP_MCP_SECRETS_DIR", NULL, 0,
		 "the older name of --secrets-dir", NULL},
		{"mcp-stdio-allow", "AWOOOP_MCP_STDIO_ALLOW", NULL, 0,
		 "what stdio MCP upstreams may run, each in a sandbox: whole argvs separated by "
		 "';' (\"/usr/bin/node /opt/t/server.js *\": a last * allows more arguments), or "
		 "@FILE / a JSON array of {argv, env (names a tenant may set), paths (shown "
		 "read-only)} (default: none)",
		 NULL},
		{"mcp-stdio-network", "AWOOOP_MCP_STDIO_NETWORK", NULL, 0,
		 "projects (comma-separated, or *) whose stdio MCP upstreams share the host's "
		 "network (default: none; a child has no network)",
		 NULL},
		{"mcp-sandbox-uid", "AWOOOP_MCP_SANDBOX_UID", "65534", 0,
		 "the uid and gid stdio MCP upstreams run as outside their user namespaces when "
		 "awooop runs as root",
		 NULL},
		{"mcp-stdio-pids", "AWOOOP_MCP_STDIO_PIDS", "128", 0,
		 "processes and threads a stdio MCP upstream may have (RLIMIT_NPROC in its user "
		 "namespace; pids.max too with a cgroup v2 --mcp-cgroup)",
		 NULL},
		{"mcp-stdio-cpu-s", "AWOOOP_MCP_STDIO_CPU_S", "3600", 0,
		 "CPU seconds a stdio MCP upstream may use before the kernel stops it (it is "
		 "restarted with backoff)",
		 NULL},
		{"mcp-allow-origins", "AWOOOP_MCP_ALLOW_ORIGINS", NULL, 0,
		 "browser origins that may call the MCP endpoint, ','-separated "
		 "(default: loopback ones; a request without Origin is not a browser's)",
		 NULL},
		{"mcp-cgroup", "AWOOOP_MCP_CGROUP", NULL, 0,
		 "a memory cgroup directory (v2, or v1's memory hierarchy) delegated to awooop: "
		 "each stdio MCP upstream runs in a cgroup of its own under it, limited to "
		 "--mcp-stdio-memory-mb (default: no memory limit)",
		 NULL},
		{"mcp-stdio-memory-mb", "AWOOOP_MCP_STDIO_MEMORY_MB", "512", 0,
		 "a stdio MCP upstream's memory limit: its cgroup's with --mcp-cgroup (over it "
		 "the kernel kills the child; it is restarted with backoff), else RLIMIT_DATA "
		 "(allocations fail); 0: none",
		 NULL},
		{"mcp-workers", "AWOOOP_MCP_WORKERS", "32", 0, "MCP upstream I/O threads", NULL},
		{"mcp-timeout-ms", "AWOOOP_MCP_TIMEOUT_MS", "30000", 0,
		 "a tool call's default timeout (a tool's timeout_ms wins, up to "
		 "--mcp-timeout-max-ms)",
		 NULL},
		{"mcp-timeout-max-ms", "AWOOOP_MCP_TIMEOUT_MAX_MS", "120000", 0,
		 "the longest timeout_ms a tenant's tool may set", NULL},
		{"mcp-project-workers", "AWOOOP_MCP_PROJECT_WORKERS", NULL, 0,
		 "of the --mcp-workers, how many one project's requests may hold at once: N, or "
		 "N,PROJECT=M,... (default: a quarter of the workers); one more is always kept "
		 "for list requests",
		 NULL},
		{"mcp-project-queue", "AWOOOP_MCP_PROJECT_QUEUE", "1024", 0,
		 "MCP requests one project may have waiting (past it: 429 E-MCP-008)", NULL},
		{"channels", "AWOOOP_CHANNELS", "on", 0,
		 "on|off: run the channel hub (Telegram bots of channel_event contracts) in roles "
		 "all and hub",
		 NULL},
		{"telegram-api", "AWOOOP_TELEGRAM_API", "https://api.telegram.org", 0,
		 "the Telegram Bot API base URL", NULL},
		{"channel-poll-timeout-s", "AWOOOP_CHANNEL_POLL_TIMEOUT_S", "25", 0,
		 "getUpdates long-poll timeout", NULL},
		{"channel-lease-ms", "AWOOOP_CHANNEL_LEASE_MS", "10000", 0,
		 "the hub leader's lease (cluster shape): a dead leader is replaced within it",
		 NULL},
		{"channel-per-chat-ms", "AWOOOP_CHANNEL_PER_CHAT_MS", "1000", 0,
		 "at most one message per chat per this many ms", NULL},
		{"channel-per-bot", "AWOOOP_CHANNEL_PER_BOT", "30", 0,
		 "at most this many messages per bot per second", NULL},
		{"channel-webhook-url", "AWOOOP_CHANNEL_WEBHOOK_URL", NULL, 0,
		 "the public base URL Telegram posts webhook bots' updates to "
		 "(<URL>/v1/channels/telegram/<project>/<bot>)",
		 NULL},
		{"run-retention-h", "AWOOOP_RUN_RETENTION_H", "168", 0,
		 "finished runs (and their journals) are deleted this many hours after they end; "
		 "0 keeps them (their audit records always stay)",
		 NULL},
		{"fleet-report-ms", "AWOOOP_FLEET_REPORT_MS", "5000", 0,
		 "how often the process reports the revisions it serves (the contracts' "
		 "convergence endpoint; gone after 3 missed reports)",
		 NULL},
		{"queue-age-ms", "AWOOOP_QUEUE_AGE_MS", "15000", 0,
		 "how often a worker measures each queue's oldest runnable run and how many are "
		 "due (metrics awooop_run_queue_oldest_age_seconds, awooop_run_queue_depth; one "
		 "statement for every project), at most once a heartbeat; 0: not in this process",
		 NULL},
		{"schedule-ms", "AWOOOP_SCHEDULE_MS", "1000", 0,
		 "how often a worker fires the schedules that are due (one indexed statement when "
		 "none is); any number of workers may, each tick starts one run; 0: not in this "
		 "process",
		 NULL},
		{"otlp-endpoint", "AWOOOP_OTLP_ENDPOINT", NULL, 0,
		 "export traces over OTLP/HTTP JSON to this base URL (POST URL/v1/traces); unset: "
		 "the OTEL_EXPORTER_OTLP_* variables decide, none set: no export "
		 "(docs/observability.md)",
		 NULL},
		{"redaction-poll-ms", "AWOOOP_REDACTION_POLL_MS", "2000", 0,
		 "how often the process checks whether a project's custom redaction patterns "
		 "changed (set through another process)",
		 NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	if (argc == 1 && strcmp(argv[0], "--options-markdown") == 0) {
		print_options_markdown(opts);
		return 0;
	}
	const char *pos[1];
	int npos = 0;
	int rc = aw_cli_parse(
		argc, argv, opts, pos, &npos,
		"usage: awooop serve [options]\n\n"
		"Runs the control plane. The default is the embedded shape: one\n"
		"process, SQLite at ./var/awooop.db, HTTP on 127.0.0.1:8080. On first\n"
		"start it prints a platform-admin API key once (or installs\n"
		"AWOOOP_BOOTSTRAP_KEY).\n\n"
		"Roles: all (default: API + outbox relay + run workers + channel hub), api,\n"
		"relay (outbox relay only), worker (run workers only: claim, heartbeat,\n"
		"reaper), hub (the channel hub only: one leader polls and sends).\n"
		"A lease must outlast several heartbeats (--lease-ms >= 2 x --heartbeat-ms).\n\n"
		"Examples:\n"
		"  awooop serve\n"
		"  awooop serve --db postgresql://awooop_app@db/awooop --redis redis://cache:6379 \\\n"
		"      --role api --listen 0.0.0.0:8080");
	if (rc)
		return rc < 0 ? 0 : rc;
	if ((rc = set_log_level(aw_cli_get(opts, "log-level"))))
		return rc;
	const char *role = aw_cli_get(opts, "role");
	if (strcmp(role, "all") && strcmp(role, "api") && strcmp(role, "relay") &&
	    strcmp(role, "worker") && strcmp(role, "hub"))
		return aw_cli_fail(AW_E_CONFIG, "--role must be all, api, relay, worker or hub");
	const char *channels = aw_cli_get(opts, "channels");
	if (strcmp(channels, "on") && strcmp(channels, "off"))
		return aw_cli_fail(AW_E_CONFIG, "--channels must be on or off");
	long body_limit, pool, relay_poll, body_memory, per_ip, threads, head_ms, req_s, drain_s,
		anon_body;
	if ((rc = aw_cli_opt_long(opts, "body-limit", 1024, 64L << 20, &body_limit)) ||
	    (rc = aw_cli_opt_long(opts, "body-memory", 1024, 16L << 30, &body_memory)) ||
	    (rc = aw_cli_opt_long(opts, "anon-body-memory", 0, 16L << 30, &anon_body)) ||
	    (rc = aw_cli_opt_long(opts, "max-per-ip", 1, 100000, &per_ip)) ||
	    (rc = aw_cli_opt_long(opts, "http-threads", 1, 256, &threads)) ||
	    (rc = aw_cli_opt_long(opts, "head-timeout-ms", 100, 600000, &head_ms)) ||
	    (rc = aw_cli_opt_long(opts, "request-timeout-s", 1, 3600, &req_s)) ||
	    (rc = aw_cli_opt_long(opts, "drain-s", 0, 3600, &drain_s)) ||
	    (rc = aw_cli_opt_long(opts, "pool-size", 1, 256, &pool)) ||
	    (rc = aw_cli_opt_long(opts, "relay-poll-ms", 10, 3600000, &relay_poll)))
		return rc;
	static const struct {
		const char *name;
		long lo, hi;
	} ranges[] = {
		{"concurrency", 1, 256},
		{"batch", 1, 1000},
		{"heartbeat-ms", 50, 600000},
		{"lease-ms", 100, 3600000},
		{"worker-poll-ms", 10, 60000},
		{"retry-base-ms", 1, 3600000},
		{"retry-max-ms", 1, 86400000},
		{"llm-staleness-ms", 1, 600000},
		{"llm-timeout-s", 1, 86400},
		{"llm-connect-ms", 10, 600000},
		{"llm-first-byte-ms", 10, 3600000},
		{"llm-idle-ms", 10, 3600000},
		{"breaker-failures", 1, 1000},
		{"breaker-cooldown-ms", 10, 3600000},
		{"budget-lease-ms", 1000, 86400000},
		{"mcp-workers", 1, 1024},
		{"mcp-timeout-ms", 100, 600000},
		{"channel-poll-timeout-s", 1, 50},
		{"channel-lease-ms", 300, 600000},
		{"channel-per-chat-ms", 1, 60000},
		{"channel-per-bot", 1, 64},
		{"fleet-report-ms", 100, 600000},
		{"run-retention-h", 0, 87600},
		{"mcp-stdio-memory-mb", 0, 1048576},
		{"store-threads", 0, 256},
		{"host-store-threads", -1, 256},
		{"mcp-sandbox-uid", 1, 4294967294L},
		{"mcp-stdio-pids", 8, 65536},
		{"mcp-stdio-cpu-s", 1, 31536000},
		{"mcp-timeout-max-ms", 100, 3600000},
		{"mcp-project-queue", 1, 1000000},
		{"queue-age-ms", 0, 30000},
		{"redaction-poll-ms", 100, 5000},
		{"schedule-ms", 0, 60000},
	};
	/* no process of this uid (a stdio child before its sandbox, anything
	 * else the host runs as awooop) may read this one's memory or
	 * /proc/<pid>/environ: it holds keys and tenants' secrets */
	prctl(PR_SET_DUMPABLE, 0);
	long wv[sizeof ranges / sizeof ranges[0]];
	for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
		if ((rc = aw_cli_opt_long(opts, ranges[i].name, ranges[i].lo, ranges[i].hi,
					  &wv[i])))
			return rc;
	const char *guard = aw_cli_get(opts, "llm-guard");
	if (strcmp(guard, "bounded") && strcmp(guard, "strict"))
		return aw_cli_fail(AW_E_CONFIG, "--llm-guard must be bounded or strict");
	if (wv[3] < 2 * wv[2])
		return aw_cli_fail(AW_E_CONFIG, "--lease-ms must be at least 2 x --heartbeat-ms");
	json_t *llm_config = NULL;
	if (aw_cli_get(opts, "llm-config")) {
		aw_error lerr = {0};
		json_error_t je;
		llm_config =
			json_load_file(aw_cli_get(opts, "llm-config"), JSON_REJECT_DUPLICATES, &je);
		if (!llm_config)
			return aw_cli_fail(AW_E_CONFIG, "--llm-config: cannot read it as JSON");
		if (aw_llm_config_check(llm_config, &lerr)) {
			json_decref(llm_config);
			return aw_cli_fail(AW_E_CONFIG, lerr.msg);
		}
	}
	aw_worker_opts wo = {.id = aw_cli_get(opts, "worker-id"),
			     .concurrency = (int)wv[0],
			     .batch = (int)wv[1],
			     .heartbeat_ms = (int)wv[2],
			     .lease_ms = (int)wv[3],
			     .poll_ms = (int)wv[4],
			     .retry_base_ms = (int)wv[5],
			     .retry_max_ms = (int)wv[6],
			     .retention_h = (int)wv[22],
			     .store_threads = (int)wv[24],
			     .host_store_threads = (int)wv[25],
			     .queue_age_ms = wv[31] ? (int)wv[31] : -1,
			     .schedule_ms = wv[33] ? (int)wv[33] : -1};

	/* Block the stop signals (and SIGHUP, reload) in every thread; the main
	 * thread waits for them. */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);

	const char *secrets_dir = aw_cli_get(opts, "secrets-dir");
	if (secrets_dir && aw_cli_get(opts, "mcp-secrets-dir"))
		return aw_cli_fail(AW_E_CONFIG, "set --secrets-dir or --mcp-secrets-dir, not both");
	if (!secrets_dir)
		secrets_dir = aw_cli_get(opts, "mcp-secrets-dir");
	if (secrets_dir && secrets_dir[0] != '/')
		return aw_cli_fail(AW_E_CONFIG, "--secrets-dir must be an absolute path");

	const char *db = aw_cli_get(opts, "db");
	/* the database holds every tenant's data and key hashes: private files */
	umask(077);
	ensure_sqlite_dir(db);
	aw_error err = {0};
	aw_store *store = NULL;
	/* each run worker thread holds a connection while it works, the heartbeat
	 * one more: never let the pool make them wait on each other */
	if ((strcmp(role, "all") == 0 || strcmp(role, "worker") == 0) && pool < wv[0] + 2)
		pool = wv[0] + 2;
	aw_store_opts so = {.pool_size = (int)pool,
			    .auto_migrate = strncmp(db, "sqlite:", 7) == 0,
			    .project_pool = aw_cli_get(opts, "project-pool")};
	aw_err e = aw_store_open(db, &so, &store, &err);
	if (!e)
		e = aw_store_check_schema(store, &err);
	if (e) {
		aw_store_close(store);
		json_decref(llm_config);
		return aw_cli_fail(e, err.msg);
	}
	char printed[AW_KEY_SECRET_LEN + 1];
	const char *bootstrap = NULL;
	if ((e = aw_secret_env("AWOOOP_BOOTSTRAP_KEY", &bootstrap, &err)) ||
	    (e = aw_tenancy_bootstrap(store, bootstrap, printed, &err))) {
		aw_store_close(store);
		json_decref(llm_config);
		return aw_cli_fail(e, err.msg);
	}
	if (printed[0]) {
		printf("awooop: bootstrap platform-admin API key (shown once, store it now):\n%s\n",
		       printed);
		fflush(stdout);
		memset(printed, 0, sizeof printed);
	}

	aw_keyring *keys = NULL;
	aw_contracts *contracts = NULL;
	reloadable rl = {0};
	if ((e = aw_cli_keyring("publish", db, aw_cli_get(opts, "publish-keys"), 1, &keys, &err)) ||
	    (e = aw_contracts_new(keys, &contracts, &err))) {
		aw_keyring_free(keys);
		aw_store_close(store);
		json_decref(llm_config);
		return aw_cli_fail(e, err.msg);
	}
	if ((e = aw_egress_grant(aw_cli_get(opts, "egress-allow-private"), &err))) {
		aw_contracts_free(contracts);
		aw_keyring_free(keys);
		aw_store_close(store);
		json_decref(llm_config);
		return aw_cli_fail(e, err.msg);
	}
	aw_run_secrets_dir(secrets_dir);
	aw_http *http = NULL;
	aw_bus *bus = NULL;
	aw_relay *relay = NULL;
	aw_worker *worker = NULL;
	aw_policy_cache *policy = NULL;
	aw_fleet *fleet = NULL;
	aw_kv *kv = NULL;
	aw_approvals *approvals = NULL;
	aw_hub *hub = NULL;
	aw_hub_opts hu = {0};
	aw_redaction_poller *redaction = NULL;
	aw_keyring *approval_keys = NULL;
	aw_llm *llm = NULL;
	aw_mcp *mcp = NULL;
	aw_calls *calls = NULL;
	const char *redis = aw_cli_get(opts, "redis");
	/* traces: before anything that makes spans, stopped after all of them */
	aw_otel_opts oo = {.endpoint = aw_cli_get(opts, "otlp-endpoint"), .role = role};
	if ((e = aw_otel_start(&oo, &err)))
		goto out;
	/* one bus: the relay publishes on it, the policy cache listens (in the
	 * embedded shape it is the in-process bus, so both must share it) */
	if ((e = aw_bus_open(redis ? redis : "local", &bus, &err)))
		goto out;
	/* every role redacts (logs, audit): the projects' custom patterns are
	 * in force before the first request, and followed from then on */
	if ((e = aw_redaction_poller_start(store, (int)wv[32], &redaction, &err)))
		goto out;
	if (strcmp(role, "relay") != 0) { /* the LLM gateway: API and workers */
		aw_policy_opts po = {.mode = strcmp(guard, "strict") ? AW_GUARD_BOUNDED
								     : AW_GUARD_STRICT,
				     .max_staleness_ms = (int)wv[7]};
		aw_llm_opts lo = {.store = store,
				  .config = llm_config,
				  .contract_id = aw_cli_get(opts, "llm-contract"),
				  .connect_timeout_ms = (int)wv[9],
				  .first_byte_ms = (int)wv[10],
				  .idle_ms = (int)wv[11],
				  .breaker_failures = (int)wv[12],
				  .breaker_cooldown_ms = (int)wv[13],
				  .lease_ms = (int)wv[14],
				  .schema_retries = 3,
				  .project_inflight = aw_cli_get(opts, "llm-project-inflight"),
				  .emergency_share = aw_cli_get(opts, "llm-emergency-share")};
		aw_fleet_opts fo = {.store = store, .role = role, .report_ms = (int)wv[21]};
		if ((e = aw_policy_cache_new(store, contracts, bus, &po, &policy, &err)) ||
		    (fo.policy = policy, e = aw_fleet_start(&fo, &fleet, &err)) ||
		    (redis && (e = aw_kv_open(redis, store, NULL, &kv, &err))))
			goto out;
		/* the calls in flight of both gateways: one registry */
		aw_calls_opts co = {.store = store, .policy = policy, .lease_ms = (int)wv[14]};
		if ((e = aw_calls_new(&co, &calls, &err)))
			goto out;
		lo.policy = policy;
		lo.kv = kv;
		lo.calls = calls;
		if ((e = aw_llm_new(&lo, &llm, &err)))
			goto out;
		aw_llm_register_executor(llm);
		/* approvals: API (tokens, decisions) and workers (the step kind) */
		aw_approvals_opts ao = {.store = store,
					.contracts = contracts,
					.kv = kv,
					.issuer = aw_cli_get(opts, "approval-issuer")};
		if ((e = aw_cli_keyring("approval", db, aw_cli_get(opts, "approval-keys"), 1,
					&approval_keys, &err)) ||
		    (e = aw_approvals_new(&ao, approval_keys, &approvals, &err)))
			goto out;
		aw_approvals_register_executor(approvals);
	}
	/* the MCP gateway: the API's endpoint, and the workers' tool steps */
	if (strcmp(role, "all") == 0 || strcmp(role, "api") == 0 || strcmp(role, "worker") == 0) {
		aw_mcp_opts mo = {.store = store,
				  .policy = policy,
				  .contract_id = aw_cli_get(opts, "mcp-contract"),
				  .secrets_dir = secrets_dir,
				  .stdio_allow = aw_cli_get(opts, "mcp-stdio-allow"),
				  .stdio_network = aw_cli_get(opts, "mcp-stdio-network"),
				  .sandbox_uid = wv[26],
				  .stdio_pids = wv[27],
				  .stdio_cpu_s = wv[28],
				  .workers = (int)wv[15],
				  .project_workers = aw_cli_get(opts, "mcp-project-workers"),
				  .max_queued = (int)wv[30],
				  .timeout_ms = (int)wv[16],
				  .timeout_max_ms = (int)wv[29],
				  .kv = kv,
				  .calls = calls,
				  .cgroup_dir = aw_cli_get(opts, "mcp-cgroup"),
				  .memory_mb = wv[23] ? (int)wv[23] : -1};
		if ((e = aw_mcp_new(&mo, &mcp, &err)))
			goto out;
		aw_mcp_register_executor(mcp, approvals);
		if (llm) /* the agent step loops over both gateways */
			aw_agent_register_executor(llm, mcp, approvals);
	}
	/* the channel hub's environment: the hub (roles all, hub) and webhooks (API) */
	hu = (aw_hub_opts){.store = store,
			   .policy = policy,
			   .kv = kv,
			   .approvals = approvals,
			   .api_base = aw_cli_get(opts, "telegram-api"),
			   .secrets_dir = secrets_dir,
			   .poll_timeout_s = (int)wv[17],
			   .lease_ms = (int)wv[18],
			   .per_chat_ms = (int)wv[19],
			   .per_bot_per_s = (int)wv[20],
			   .webhook_base = aw_cli_get(opts, "channel-webhook-url")};
	if (strcmp(role, "all") == 0 || strcmp(role, "api") == 0) {
		aw_http_opts ho = {.listen = aw_cli_get(opts, "listen"),
				   .body_limit = (size_t)body_limit,
				   .body_memory = (size_t)body_memory,
				   .project_body_memory = aw_cli_get(opts, "project-body-memory"),
				   .anon_body_memory = (size_t)anon_body,
				   .max_per_ip = (int)per_ip,
				   .threads = (int)threads,
				   .head_timeout_ms = (int)head_ms,
				   .request_timeout_s = (int)req_s,
				   .redis_url = aw_cli_get(opts, "redis"),
				   .mcp_origins = aw_cli_get(opts, "mcp-allow-origins"),
				   .contracts = contracts,
				   .llm = llm,
				   .mcp = mcp,
				   .calls = calls,
				   .approvals = approvals,
				   .kv = kv,
				   .channels = policy ? &hu : NULL,
				   .policy = policy,
				   .llm_timeout_s = (int)wv[8],
				   .tls_cert = aw_cli_get(opts, "tls-cert"),
				   .tls_key = aw_cli_get(opts, "tls-key"),
				   .tls_client_ca = aw_cli_get(opts, "tls-client-ca")};
		if ((e = aw_http_start(&ho, store, &http, &err)))
			goto out;
	}
	/* The outbox relay (roles all and relay) publishes to Redis in the cluster
	 * shape, to the in-process bus in the embedded one. */
	if (strcmp(role, "all") == 0 || strcmp(role, "relay") == 0) {
		aw_relay_opts ro = {.poll_ms = (int)relay_poll};
		if ((e = aw_relay_start(store, bus, &ro, &relay, &err)))
			goto out;
	}
	if ((strcmp(role, "all") == 0 || strcmp(role, "worker") == 0) &&
	    (e = aw_worker_start(store, &wo, &worker, &err)))
		goto out;
	if ((strcmp(role, "all") == 0 || strcmp(role, "hub") == 0) && !strcmp(channels, "on") &&
	    (e = aw_hub_start(&hu, &hub, &err)))
		goto out;
	/* the address bound (the port a :0 got) and where a browser finds the
	 * console: the operator's own configuration, logged as it is */
	char port[16], listen[AW_LISTEN_TEXT_MAX], console[AW_LISTEN_TEXT_MAX + 32];
	snprintf(port, sizeof port, "%d", http ? aw_http_port(http) : 0);
	if (http) {
		console_url(aw_cli_get(opts, "listen"), aw_http_port(http),
			    aw_cli_get(opts, "tls-cert") != NULL, listen, sizeof listen, console,
			    sizeof console);
		aw_log_own(AW_LOG_INFO, "awooop serving", "role", role, "store",
			   aw_store_backend(store), "listen", listen, "port", port, "console",
			   console, NULL);
	} else {
		aw_log_own(AW_LOG_INFO, "awooop serving", "role", role, "store",
			   aw_store_backend(store), "port", port, NULL);
	}

	int sig = 0;
	rl.http = http;
	rl.contracts = contracts;
	rl.db = db;
	rl.keys_file = aw_cli_get(opts, "publish-keys");
	rl.approvals = approvals;
	rl.approval_keys_file = aw_cli_get(opts, "approval-keys");
	while (!sigwait(&stop, &sig) && sig == SIGHUP)
		reload(&rl);
	aw_log(AW_LOG_INFO, NULL, "shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM",
	       NULL);
out: /* also the way out when a part failed to start (e set) */
	/* no new connections or requests, event streams end; the requests in
	 * flight get --drain-s from here, while the hub stops, then are cut */
	aw_http_quiesce(http);
	aw_hub_stop(hub); /* hands the channel lease over */
	aw_http_drain(http, (int)drain_s * 1000);
	aw_llm_stop(llm);	/* ends model calls still in flight */
	aw_mcp_stop(mcp);	/* answers the tool calls in flight first */
	aw_http_stop(http);	/* closes what is left: nothing stays suspended */
	aw_worker_stop(worker); /* finishes the round in flight, re-queues the rest */
	aw_relay_stop(relay);
	aw_llm_free(llm);
	aw_mcp_free(mcp);
	aw_calls_free(calls); /* both doors have left */
	aw_otel_stop();	      /* the last spans get a last try */
	if (approvals)	      /* the ring in use; replaced ones are in rl.old */
		approval_keys = (aw_keyring *)aw_approvals_set_keyring(approvals, NULL);
	aw_approvals_free(approvals);
	aw_kv_close(kv);
	aw_fleet_stop(fleet); /* its rows deleted: it serves nothing any more */
	aw_policy_cache_free(policy);
	aw_bus_close(bus);
	aw_redaction_poller_stop(redaction);
	json_decref(llm_config);
	if (contracts) /* the ring in use; replaced ones are in rl.old */
		keys = (aw_keyring *)aw_contracts_set_keyring(contracts, NULL);
	for (int i = 0; i < rl.nold; i++)
		aw_keyring_free(rl.old[i]);
	aw_contracts_free(contracts);
	aw_keyring_free(keys);
	aw_keyring_free(approval_keys);
	aw_store_close(store);
	return e ? aw_cli_fail(e, err.msg) : 0;
}

int aw_cmd_migrate(int argc, char **argv)
{
	aw_opt opts[] = {
		{"db", "AWOOOP_DB", NULL, 0, "store URL, connecting as the schema owner", NULL},
		{"app-role", "AWOOOP_APP_ROLE", "awooop_app", 0,
		 "PostgreSQL role `serve` connects as (created if missing)", NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	const char *pos[1];
	int npos = 0;
	int rc = aw_cli_parse(
		argc, argv, opts, pos, &npos,
		"usage: awooop migrate --db URL [--app-role NAME]\n\n"
		"Applies pending schema migrations in one transaction. On PostgreSQL\n"
		"run it as the schema owner (superuser, or CREATEROLE with membership\n"
		"in the roles it creates); it creates the NOLOGIN role awooop_platform\n"
		"and the app role, and grants the app role what `serve` needs.\n\n"
		"Example:\n"
		"  awooop migrate --db postgresql://postgres@db/awooop --app-role awooop_app");
	if (rc)
		return rc < 0 ? 0 : rc;
	const char *db = aw_cli_get(opts, "db");
	if (!db)
		return aw_cli_fail(AW_E_USAGE, "--db is required");
	ensure_sqlite_dir(db);
	aw_error err = {0};
	aw_store *store = NULL;
	aw_store_opts so = {.pool_size = 1};
	aw_err e = aw_store_open(db, &so, &store, &err);
	if (!e)
		e = aw_store_migrate(store, aw_cli_get(opts, "app-role"), &err);
	if (e) {
		aw_store_close(store);
		return aw_cli_fail(e, err.msg);
	}
	printf("schema at version %d (%s)\n", aw_store_schema_target(store),
	       aw_store_backend(store));
	aw_store_close(store);
	return 0;
}
