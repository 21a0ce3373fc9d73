/*
 * serve.c - `awooop serve` and `awooop migrate`.
 *
 * serve reads its options (flags, then AWOOOP_* variables, then defaults)
 * into the parts' settings, has node.c start the parts its role runs (the
 * SQLite default migrates itself; PostgreSQL must have been migrated by its
 * owner), then waits: SIGHUP reloads TLS material and key files,
 * SIGINT/SIGTERM stop the parts in order.
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

#include "awooop/keyring.h"
#include "awooop/log.h"
#include "awooop/str.h"
#include "cli.h"
#include "node.h"

/* For sqlite:PATH, creates PATH's directory (one level) if missing. */
static void ensure_sqlite_dir(const char *url)
{
	if (strncmp(url, "sqlite:", 7) != 0)
		return;
	char dir[1024];
	if (AW_STR_COPY(dir, url + 7) < 0) /* the store's open says what is wrong */
		return;
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
		return cli_fail(AW_E_CONFIG, "--log-level must be debug, info, warn or error");
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
	else if (cli_keyring("publish", rl->db, rl->keys_file, 0, &keys, &err))
		aw_log(AW_LOG_ERROR, NULL, "publish key reload failed; the old keys stay", "detail",
		       err.msg, NULL);
	else {
		rl->old[rl->nold++] = (aw_keyring *)aw_contracts_set_keyring(rl->contracts, keys);
		aw_log(AW_LOG_INFO, NULL, "publish keys reloaded (SIGHUP)", NULL);
	}
	if (!rl->approvals || rl->nold == 64)
		return;
	if (cli_keyring("approval", rl->db, rl->approval_keys_file, 0, &keys, &err))
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

/* The roles' names: --role all, or one part. */
static int parse_role(const char *role)
{
	static const struct {
		const char *name;
		int bits;
	} roles[] = {{"all", NODE_ALL},
		     {"api", NODE_API},
		     {"relay", NODE_RELAY},
		     {"worker", NODE_WORKER},
		     {"hub", NODE_HUB}};
	for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
		if (!strcmp(role, roles[i].name))
			return roles[i].bits;
	return 0;
}

/* The options, checked, into c: 0 or the exit code (said). */
static int read_options(const aw_opt *opts, node_cfg *c)
{
	c->role = cli_get(opts, "role");
	if (!(c->roles = parse_role(c->role)))
		return cli_fail(AW_E_CONFIG, "--role must be all, api, relay, worker or hub");
	const char *channels = cli_get(opts, "channels");
	if (strcmp(channels, "on") && strcmp(channels, "off"))
		return cli_fail(AW_E_CONFIG, "--channels must be on or off");
	c->channels = !strcmp(channels, "on");
	const char *guard = cli_get(opts, "llm-guard");
	if (strcmp(guard, "bounded") && strcmp(guard, "strict"))
		return cli_fail(AW_E_CONFIG, "--llm-guard must be bounded or strict");
	long body_limit, body_memory, anon_body, per_ip, threads, head_ms, req_s, drain_s, pool,
		relay_poll, concurrency, batch, heartbeat, lease, worker_poll, retry_base,
		retry_max, staleness, llm_timeout, connect, first_byte, idle, breaker_n, breaker_ms,
		budget_lease, mcp_workers, mcp_timeout, poll_timeout, channel_lease, per_chat,
		per_bot, fleet_ms, retention, stdio_mb, store_threads, host_threads, sandbox_uid,
		stdio_pids, stdio_cpu, mcp_timeout_max, mcp_queue, queue_age, redaction_poll,
		schedule;
	const struct {
		const char *name;
		long lo, hi, *out;
	} nums[] = {
		{"body-limit", 1024, 64L << 20, &body_limit},
		{"body-memory", 1024, 16L << 30, &body_memory},
		{"anon-body-memory", 0, 16L << 30, &anon_body},
		{"max-per-ip", 1, 100000, &per_ip},
		{"http-threads", 1, 256, &threads},
		{"head-timeout-ms", 100, 600000, &head_ms},
		{"request-timeout-s", 1, 3600, &req_s},
		{"drain-s", 0, 3600, &drain_s},
		{"pool-size", 1, 256, &pool},
		{"relay-poll-ms", 10, 3600000, &relay_poll},
		{"concurrency", 1, 256, &concurrency},
		{"batch", 1, 1000, &batch},
		{"heartbeat-ms", 50, 600000, &heartbeat},
		{"lease-ms", 100, 3600000, &lease},
		{"worker-poll-ms", 10, 60000, &worker_poll},
		{"retry-base-ms", 1, 3600000, &retry_base},
		{"retry-max-ms", 1, 86400000, &retry_max},
		{"llm-staleness-ms", 1, 600000, &staleness},
		{"llm-timeout-s", 1, 86400, &llm_timeout},
		{"llm-connect-ms", 10, 600000, &connect},
		{"llm-first-byte-ms", 10, 3600000, &first_byte},
		{"llm-idle-ms", 10, 3600000, &idle},
		{"breaker-failures", 1, 1000, &breaker_n},
		{"breaker-cooldown-ms", 10, 3600000, &breaker_ms},
		{"budget-lease-ms", 1000, 86400000, &budget_lease},
		{"mcp-workers", 1, 1024, &mcp_workers},
		{"mcp-timeout-ms", 100, 600000, &mcp_timeout},
		{"channel-poll-timeout-s", 1, 50, &poll_timeout},
		{"channel-lease-ms", 300, 600000, &channel_lease},
		{"channel-per-chat-ms", 1, 60000, &per_chat},
		{"channel-per-bot", 1, 64, &per_bot},
		{"fleet-report-ms", 100, 600000, &fleet_ms},
		{"run-retention-h", 0, 87600, &retention},
		{"mcp-stdio-memory-mb", 0, 1048576, &stdio_mb},
		{"store-threads", 0, 256, &store_threads},
		{"host-store-threads", -1, 256, &host_threads},
		{"mcp-sandbox-uid", 1, 4294967294L, &sandbox_uid},
		{"mcp-stdio-pids", 8, 65536, &stdio_pids},
		{"mcp-stdio-cpu-s", 1, 31536000, &stdio_cpu},
		{"mcp-timeout-max-ms", 100, 3600000, &mcp_timeout_max},
		{"mcp-project-queue", 1, 1000000, &mcp_queue},
		{"queue-age-ms", 0, 30000, &queue_age},
		{"redaction-poll-ms", 100, 5000, &redaction_poll},
		{"schedule-ms", 0, 60000, &schedule},
	};
	int rc;
	for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
		if ((rc = cli_opt_long(opts, nums[i].name, nums[i].lo, nums[i].hi, nums[i].out)))
			return rc;
	if (lease < 2 * heartbeat)
		return cli_fail(AW_E_CONFIG, "--lease-ms must be at least 2 x --heartbeat-ms");
	c->secrets_dir = cli_get(opts, "secrets-dir");
	if (c->secrets_dir && cli_get(opts, "mcp-secrets-dir"))
		return cli_fail(AW_E_CONFIG, "set --secrets-dir or --mcp-secrets-dir, not both");
	if (!c->secrets_dir)
		c->secrets_dir = cli_get(opts, "mcp-secrets-dir");
	if (c->secrets_dir && c->secrets_dir[0] != '/')
		return cli_fail(AW_E_CONFIG, "--secrets-dir must be an absolute path");
	c->db = cli_get(opts, "db");
	c->redis = cli_get(opts, "redis");
	c->publish_keys = cli_get(opts, "publish-keys");
	c->approval_keys = cli_get(opts, "approval-keys");
	c->egress_private = cli_get(opts, "egress-allow-private");
	c->redaction_poll_ms = (int)redaction_poll;
	c->drain_ms = (int)drain_s * 1000;
	/* each run worker thread holds a connection while it works, the
	 * heartbeat one more: never let the pool make them wait on each other */
	if ((c->roles & NODE_WORKER) && pool < concurrency + 2)
		pool = concurrency + 2;
	c->store = (aw_store_opts){.pool_size = (int)pool,
				   .auto_migrate = strncmp(c->db, "sqlite:", 7) == 0,
				   .project_pool = cli_get(opts, "project-pool")};
	c->otel = (aw_otel_opts){.endpoint = cli_get(opts, "otlp-endpoint"), .role = c->role};
	c->policy = (aw_policy_opts){.mode = strcmp(guard, "strict") ? AW_GUARD_BOUNDED
								     : AW_GUARD_STRICT,
				     .max_staleness_ms = (int)staleness};
	c->fleet = (aw_fleet_opts){.role = c->role, .report_ms = (int)fleet_ms};
	c->llm = (aw_llm_opts){.contract_id = cli_get(opts, "llm-contract"),
			       .connect_timeout_ms = (int)connect,
			       .first_byte_ms = (int)first_byte,
			       .idle_ms = (int)idle,
			       .breaker_failures = (int)breaker_n,
			       .breaker_cooldown_ms = (int)breaker_ms,
			       .lease_ms = (int)budget_lease,
			       .schema_retries = 3,
			       .project_inflight = cli_get(opts, "llm-project-inflight"),
			       .emergency_share = cli_get(opts, "llm-emergency-share"),
			       .secrets_dir = c->secrets_dir};
	c->approvals = (aw_approvals_opts){.issuer = cli_get(opts, "approval-issuer")};
	c->mcp = (aw_mcp_opts){.contract_id = cli_get(opts, "mcp-contract"),
			       .secrets_dir = c->secrets_dir,
			       .stdio_allow = cli_get(opts, "mcp-stdio-allow"),
			       .stdio_network = cli_get(opts, "mcp-stdio-network"),
			       .sandbox_uid = sandbox_uid,
			       .stdio_pids = stdio_pids,
			       .stdio_cpu_s = stdio_cpu,
			       .workers = (int)mcp_workers,
			       .project_workers = cli_get(opts, "mcp-project-workers"),
			       .max_queued = (int)mcp_queue,
			       .timeout_ms = (int)mcp_timeout,
			       .timeout_max_ms = (int)mcp_timeout_max,
			       .cgroup_dir = cli_get(opts, "mcp-cgroup"),
			       .memory_mb = stdio_mb ? (int)stdio_mb : -1};
	c->hub = (aw_hub_opts){.api_base = cli_get(opts, "telegram-api"),
			       .poll_timeout_s = (int)poll_timeout,
			       .lease_ms = (int)channel_lease,
			       .per_chat_ms = (int)per_chat,
			       .per_bot_per_s = (int)per_bot,
			       .webhook_base = cli_get(opts, "channel-webhook-url")};
	c->http = (aw_http_opts){.listen = cli_get(opts, "listen"),
				 .body_limit = (size_t)body_limit,
				 .body_memory = (size_t)body_memory,
				 .project_body_memory = cli_get(opts, "project-body-memory"),
				 .anon_body_memory = (size_t)anon_body,
				 .max_per_ip = (int)per_ip,
				 .threads = (int)threads,
				 .head_timeout_ms = (int)head_ms,
				 .request_timeout_s = (int)req_s,
				 .mcp_origins = cli_get(opts, "mcp-allow-origins"),
				 .llm_timeout_s = (int)llm_timeout,
				 .tls_cert = cli_get(opts, "tls-cert"),
				 .tls_key = cli_get(opts, "tls-key"),
				 .tls_client_ca = cli_get(opts, "tls-client-ca")};
	c->relay = (aw_relay_opts){.poll_ms = (int)relay_poll};
	c->worker = (aw_worker_opts){.id = cli_get(opts, "worker-id"),
				     .concurrency = (int)concurrency,
				     .batch = (int)batch,
				     .heartbeat_ms = (int)heartbeat,
				     .lease_ms = (int)lease,
				     .poll_ms = (int)worker_poll,
				     .retry_base_ms = (int)retry_base,
				     .retry_max_ms = (int)retry_max,
				     .retention_h = (int)retention,
				     .store_threads = (int)store_threads,
				     .host_store_threads = (int)host_threads,
				     .queue_age_ms = queue_age ? (int)queue_age : -1,
				     .schedule_ms = schedule ? (int)schedule : -1};
	return 0;
}

/* The serving line: the address bound (the port a :0 got) and where a
 * browser finds the console - the operator's own configuration, logged as
 * it is. */
static void log_serving(const node_cfg *c, const node *n)
{
	char port[16], listen[AW_LISTEN_TEXT_MAX], console[AW_LISTEN_TEXT_MAX + 32];
	snprintf(port, sizeof port, "%d", n->http ? aw_http_port(n->http) : 0);
	if (!n->http) {
		aw_log_own(AW_LOG_INFO, "awooop serving", "role", c->role, "store",
			   aw_store_backend(n->store), "port", port, NULL);
		return;
	}
	console_url(c->http.listen, aw_http_port(n->http), c->http.tls_cert != NULL, listen,
		    sizeof listen, console, sizeof console);
	aw_log_own(AW_LOG_INFO, "awooop serving", "role", c->role, "store",
		   aw_store_backend(n->store), "listen", listen, "port", port, "console", console,
		   NULL);
}

int cmd_serve(int argc, char **argv)
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
		 "projects (comma-separated, or *) whose http run steps, MCP upstreams and own LLM upstreams may "
		 "reach loopback and private addresses (link-local and metadata: never)",
		 NULL},
		{"mcp-contract", "AWOOOP_MCP_CONTRACT", "default", 0,
		 "the mcp_tool contract id that lists a project's tool servers", NULL},
		{"secrets-dir", "AWOOOP_SECRETS_DIR", NULL, 0,
		 "tenants' file: secret references (run steps, MCP and LLM upstreams, bots) resolve in "
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
	int rc = cli_parse(
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
	if ((rc = set_log_level(cli_get(opts, "log-level"))))
		return rc;
	node_cfg c = {0};
	if ((rc = read_options(opts, &c)))
		return rc;
	/* no process of this uid (a stdio child before its sandbox, anything
	 * else the host runs as awooop) may read this one's memory or
	 * /proc/<pid>/environ: it holds keys and tenants' secrets */
	prctl(PR_SET_DUMPABLE, 0);
	json_t *llm_config = NULL;
	if (cli_get(opts, "llm-config")) {
		aw_error lerr = {0};
		json_error_t je;
		llm_config =
			json_load_file(cli_get(opts, "llm-config"), JSON_REJECT_DUPLICATES, &je);
		if (!llm_config)
			return cli_fail(AW_E_CONFIG, "--llm-config: cannot read it as JSON");
		if (aw_llm_config_check(llm_config, &lerr)) {
			json_decref(llm_config);
			return cli_fail(AW_E_CONFIG, lerr.msg);
		}
	}
	c.llm_config = llm_config;

	/* Block the stop signals (and SIGHUP, reload) in every thread; the main
	 * thread waits for them. */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* the database holds every tenant's data and key hashes: private files */
	umask(077);
	ensure_sqlite_dir(c.db);
	aw_error err = {0};
	node n;
	reloadable rl = {0};
	aw_err e = node_start(&c, &n, &err);
	if (!e) {
		log_serving(&c, &n);
		int sig = 0;
		rl.http = n.http;
		rl.contracts = n.contracts;
		rl.db = c.db;
		rl.keys_file = c.publish_keys;
		rl.approvals = n.approvals;
		rl.approval_keys_file = c.approval_keys;
		while (!sigwait(&stop, &sig) && sig == SIGHUP)
			reload(&rl);
		aw_log(AW_LOG_INFO, NULL, "shutting down", "signal",
		       sig == SIGINT ? "SIGINT" : "SIGTERM", NULL);
	}
	node_stop(&n, c.drain_ms);
	for (int i = 0; i < rl.nold; i++) /* the rings SIGHUP replaced */
		aw_keyring_free(rl.old[i]);
	json_decref(llm_config);
	return e ? cli_fail(e, err.msg) : 0;
}

int cmd_migrate(int argc, char **argv)
{
	aw_opt opts[] = {
		{"db", "AWOOOP_DB", NULL, 0, "store URL, connecting as the schema owner", NULL},
		{"app-role", "AWOOOP_APP_ROLE", "awooop_app", 0,
		 "PostgreSQL role `serve` connects as (created if missing)", NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	const char *pos[1];
	int npos = 0;
	int rc = cli_parse(
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
	const char *db = cli_get(opts, "db");
	if (!db)
		return cli_fail(AW_E_USAGE, "--db is required");
	ensure_sqlite_dir(db);
	aw_error err = {0};
	aw_store *store = NULL;
	aw_store_opts so = {.pool_size = 1};
	aw_err e = aw_store_open(db, &so, &store, &err);
	if (!e)
		e = aw_store_migrate(store, cli_get(opts, "app-role"), &err);
	if (e) {
		aw_store_close(store);
		return cli_fail(e, err.msg);
	}
	printf("schema at version %d (%s)\n", aw_store_schema_target(store),
	       aw_store_backend(store));
	aw_store_close(store);
	return 0;
}
