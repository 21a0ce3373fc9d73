/*
 * metrics.c - a deliberately small metrics registry (see metrics.h).
 *
 * Series are kept in a linked list under one mutex, keyed by family + label
 * string. Cardinality is bounded by construction: callers pass route templates
 * and backend names, never user input. Histograms use fixed latency buckets.
 */
#include "awooop/alloc.h"
#include "awooop/metrics.h"

#include "awooop/buf.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "awooop/clock.h"
#include "awooop/str.h"

#ifndef AWOOOP_VERSION
#define AWOOOP_VERSION "0.0.0"
#endif

/* Histogram buckets (upper bounds, seconds): latencies, and whole runs
 * (from submission to a final state: seconds to a day). */
static const double buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
				 0.05,	 0.1,	0.25,	0.5,   1,    2.5};
#define NB (sizeof buckets / sizeof buckets[0])
static const double run_buckets[] = {0.1, 0.5, 1,   2.5,  5,	10,    30,   60,
				     120, 300, 600, 1800, 3600, 14400, 86400};
#define NB_MAX 16
_Static_assert(NB <= NB_MAX && sizeof run_buckets / sizeof run_buckets[0] <= NB_MAX,
	       "a histogram's buckets fit its series");

enum kind { COUNTER, HISTOGRAM, GAUGE };

typedef struct series {
	struct series *next;
	const char *family; /* static */
	enum kind kind;
	char labels[256];
	double value; /* counter total, gauge value, or histogram sum */
	unsigned long long count, bucket[NB_MAX];
	const double *bounds; /* a histogram's buckets (nb of them) */
	size_t nb;
	int64_t expires_ms; /* a gauge left out of the text from then on; 0: never */
} series;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static series *head;

static const struct {
	const char *family, *help, *type;
} families[] = {
	{"awooop_http_requests_total", "HTTP requests by route, method and status.", "counter"},
	{"awooop_http_request_duration_seconds", "HTTP request latency by route.", "histogram"},
	{"awooop_store_query_duration_seconds", "Store statement latency by backend.", "histogram"},
	{"awooop_store_errors_total", "Store statements that failed, by backend and code.",
	 "counter"},
	{"awooop_loop_last_tick_seconds",
	 "Unix time of each background loop's last successful tick.", "gauge"},
	{"awooop_relay_publish_duration_seconds", "Outbox relay publish latency.", "histogram"},
	{"awooop_relay_publish_failures_total", "Outbox events whose publish failed.", "counter"},
	{"awooop_outbox_undelivered", "Outbox events not yet delivered.", "gauge"},
	{"awooop_outbox_oldest_undelivered_age_seconds", "Age of the oldest undelivered event.",
	 "gauge"},
	{"awooop_run_events_total",
	 "Run runtime events: runs claimed, steps executed, runs succeeded, runs failed, leases"
	 " reaped, claims that found nothing (empty_claim).",
	 "counter"},
	{"awooop_http_connections_cut_total",
	 "Connections closed for missing a deadline (the request head, or the rest of the "
	 "request), or ended when their peer hung up while parked (hangup).",
	 "counter"},
	{"awooop_llm_calls_total", "LLM gateway calls by project, route, upstream and outcome.",
	 "counter"},
	{"awooop_llm_call_duration_seconds", "LLM gateway call latency by project and route.",
	 "histogram"},
	{"awooop_llm_tokens_total",
	 "Tokens metered by the LLM gateway, by project, route and direction.", "counter"},
	{"awooop_llm_events_total",
	 "LLM gateway events: failover, schema_retry, pool_reset, refused (label: upstream or code).",
	 "counter"},
	{"awooop_llm_breaker_state", "Circuit breaker per upstream: 0 closed, 1 open, 2 half-open.",
	 "gauge"},
	{"awooop_budget_events_total",
	 "Token budget events by project: reserved, clamped, refused, suspended, cut, reaped,"
	 " settled, released, alert, overshoot.",
	 "counter"},
	{"awooop_budget_tokens_total",
	 "Tokens through the budget ledger by project: reserved, settled, released, reaped.",
	 "counter"},
	{"awooop_mcp_calls_total",
	 "MCP gateway tools/call by project, tool and outcome (ok, tool_error, refused, failed).",
	 "counter"},
	{"awooop_mcp_call_duration_seconds", "MCP gateway tools/call latency by project.",
	 "histogram"},
	{"awooop_mcp_refusals_total", "MCP gateway refusals by project, gate and code.", "counter"},
	{"awooop_channel_events_total",
	 "Channel hub events by project, direction (in, out) and outcome (run, status, approval,"
	 " ignored; sent, retried, failed, deduplicated, silenced).",
	 "counter"},
	{"awooop_channel_leader", "1 while this process leads the channel hub (polls and sends).",
	 "gauge"},
	{"awooop_policy_changes_total",
	 "Active revisions this process learned, by how (bus, fallback, guard, resync).",
	 "counter"},
	{"awooop_fleet_reports_total",
	 "Fleet reports (revisions served) this process wrote, by outcome (ok, failed).",
	 "counter"},
	{"awooop_llm_emergency_calls",
	 "Emergency cloud calls granted this UTC day, as this process last counted them"
	 " (cluster-wide with Redis); gone at the day's end.",
	 "gauge"},
	{"awooop_llm_emergency_cap", "The emergency cloud model's daily cap, while the count is.",
	 "gauge"},
	{"awooop_budget_used_ratio",
	 "Share of its period's limit a project has settled (the larger of tokens and cost), as of"
	 " its last settlement in this process; gone 15 minutes after it.",
	 "gauge"},
	{"awooop_audit_chain_intact",
	 "1 when this process's last verification of a project's audit chain found it intact,"
	 " 0 when it found a break.",
	 "gauge"},
	{"awooop_mcp_stdio_restarts_total",
	 "MCP stdio upstream children that exited and are restarted, by project.", "counter"},
	{"awooop_bus_connected", "1 while the Redis bus subscription is up, 0 while it is not.",
	 "gauge"},
	{"awooop_llm_inflight", "LLM gateway calls in flight in this process, by project.",
	 "gauge"},
	{"awooop_budget_cost_usd_total",
	 "Cost settled through the budget ledger by project, in US dollars (priced models).",
	 "counter"},
	{"awooop_run_finished_total",
	 "Runs that reached a final state, by project, queue (a declared one) and outcome"
	 " (succeeded, failed, cancelled, suggested).",
	 "counter"},
	{"awooop_run_queue_oldest_age_seconds",
	 "Seconds the oldest runnable run (queued or retry_wait, due) of a queue has waited"
	 " since it became due, as this worker process last measured; queues without one are"
	 " absent.",
	 "gauge"},
	{"awooop_policy_convergence_lag_seconds",
	 "Per project and family this process serves: seconds since the store's active revision"
	 " of one of its contracts was activated while this process still serves another; 0"
	 " when converged.",
	 "gauge"},
	{"awooop_redact_custom_limited_total",
	 "A project's custom redaction patterns stopped before the end of a text by their match"
	 " limits or CPU budget (the rest of that text was not searched for them), by project.",
	 "counter"},
	{"awooop_run_duration_seconds",
	 "Runs that reached a final state, by project, queue and outcome (succeeded, failed,"
	 " cancelled, suggested): seconds from their submission to it (a run_at later than the"
	 " submission and a wait for approval included).",
	 "histogram"},
	{"awooop_run_queue_depth",
	 "Runnable runs (queued or retry_wait, due) of a queue, as this worker process last"
	 " counted them (up to 100000); queues without one are absent.",
	 "gauge"},
	{"awooop_otel_spans_exported_total",
	 "Trace spans the OTLP exporter delivered (the receiver accepted them).", "counter"},
	{"awooop_otel_spans_dropped_total",
	 "Trace spans never delivered, by reason: queue_full, project_share (a project held"
	 " half the queue), export_failed (retries ran out), rejected (the receiver refused"
	 " them), shutdown (ended while the exporter stopped).",
	 "counter"},
	{"awooop_otel_exports_total",
	 "OTLP export requests by outcome: ok, retry (a retryable failure, tried again later),"
	 " failed.",
	 "counter"},
	{"awooop_llm_team_calls_total",
	 "LLM gateway calls made with a virtual key that names a team, by project and team (at"
	 " most 32 teams per project in a process; the rest count as team=\"_other\").",
	 "counter"},
	{"awooop_llm_team_tokens_total",
	 "Tokens (in + out) of the LLM gateway calls made with a virtual key that names a team,"
	 " by project and team (bounded as awooop_llm_team_calls_total).",
	 "counter"},
};

/* Caller holds mu. */
static series *get(const char *family, enum kind kind, const char *labels)
{
	for (series *s = head; s; s = s->next)
		if (s->family == family && strcmp(s->labels, labels) == 0)
			return s;
	series *s = aw_calloc(1, sizeof *s);
	if (!s || AW_STR_COPY(s->labels, labels) < 0) { /* not counted, as out of memory */
		free(s);
		return NULL;
	}
	s->family = family;
	s->kind = kind;
	s->bounds = buckets;
	s->nb = NB;
	s->next = head;
	head = s;
	return s;
}

static void observe(series *s, double v)
{
	if (!s)
		return;
	s->value += v;
	s->count++;
	for (size_t i = 0; i < s->nb; i++)
		if (v <= s->bounds[i])
			s->bucket[i]++;
}

/* The method as a label: the request's own word only when it is a standard
 * one (a client can send any token; each would be a new series). */
static const char *method_label(const char *m)
{
	static const char *const known[] = {"GET",   "POST", "PUT",    "DELETE",
					    "PATCH", "HEAD", "OPTIONS"};
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (!strcmp(m, known[i]))
			return known[i];
	return "other";
}

void aw_metrics_http_observe(const char *method, const char *route, int status, double seconds)
{
	char l[160];
	method = method_label(method);
	pthread_mutex_lock(&mu);
	snprintf(l, sizeof l, "route=\"%s\",method=\"%s\",status=\"%d\"", route, method, status);
	series *c = get(families[0].family, COUNTER, l);
	if (c)
		c->value += 1;
	snprintf(l, sizeof l, "route=\"%s\"", route);
	observe(get(families[1].family, HISTOGRAM, l), seconds);
	pthread_mutex_unlock(&mu);
}

void aw_metrics_store_observe(const char *backend, double seconds, aw_err result)
{
	char l[160];
	pthread_mutex_lock(&mu);
	snprintf(l, sizeof l, "backend=\"%s\"", backend);
	observe(get(families[2].family, HISTOGRAM, l), seconds);
	if (result != AW_OK) {
		snprintf(l, sizeof l, "backend=\"%s\",code=\"%s\"", backend, aw_err_code(result));
		series *c = get(families[3].family, COUNTER, l);
		if (c)
			c->value += 1;
	}
	pthread_mutex_unlock(&mu);
}

void aw_metrics_relay_publish(double seconds, int ok)
{
	pthread_mutex_lock(&mu);
	observe(get(families[5].family, HISTOGRAM, ""), seconds);
	if (!ok) {
		series *c = get(families[6].family, COUNTER, "");
		if (c)
			c->value += 1;
	}
	pthread_mutex_unlock(&mu);
}

void aw_metrics_outbox_backlog(double undelivered, double oldest_age_s)
{
	pthread_mutex_lock(&mu);
	series *g = get(families[7].family, GAUGE, "");
	if (g)
		g->value = undelivered;
	g = get(families[8].family, GAUGE, "");
	if (g)
		g->value = oldest_age_s;
	pthread_mutex_unlock(&mu);
}

/* Adds n to the counter of family with labels. */
static void counter_add(int family, const char *labels, double n)
{
	pthread_mutex_lock(&mu);
	series *c = get(families[family].family, COUNTER, labels);
	if (c)
		c->value += n;
	pthread_mutex_unlock(&mu);
}

void aw_metrics_run_event(const char *event, double n)
{
	char l[64];
	snprintf(l, sizeof l, "event=\"%s\"", event);
	counter_add(9, l, n);
}

void aw_metrics_http_cut(const char *reason)
{
	char l[64];
	snprintf(l, sizeof l, "reason=\"%s\"", reason);
	counter_add(10, l, 1);
}

void aw_metrics_llm_call(const char *project, const char *route, const char *upstream,
			 const char *outcome, double seconds, long long tokens_in,
			 long long tokens_out)
{
	char l[160];
	pthread_mutex_lock(&mu);
	snprintf(l, sizeof l, "project=\"%s\",route=\"%s\",upstream=\"%s\",outcome=\"%s\"", project,
		 route, upstream, outcome);
	series *c = get(families[11].family, COUNTER, l);
	if (c)
		c->value += 1;
	snprintf(l, sizeof l, "project=\"%s\",route=\"%s\"", project, route);
	observe(get(families[12].family, HISTOGRAM, l), seconds);
	snprintf(l, sizeof l, "project=\"%s\",route=\"%s\",direction=\"in\"", project, route);
	if ((c = get(families[13].family, COUNTER, l)))
		c->value += (double)tokens_in;
	snprintf(l, sizeof l, "project=\"%s\",route=\"%s\",direction=\"out\"", project, route);
	if ((c = get(families[13].family, COUNTER, l)))
		c->value += (double)tokens_out;
	pthread_mutex_unlock(&mu);
}

void aw_metrics_llm_event(const char *event, const char *upstream)
{
	char l[160];
	snprintf(l, sizeof l, "event=\"%s\",upstream=\"%s\"", event, upstream);
	counter_add(14, l, 1);
}

/* A family by its name (for families added at the end of the table). */
static const char *family_named(const char *name)
{
	for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
		if (!strcmp(families[i].family, name))
			return families[i].family;
	return NULL;
}

#define TEAMS_PER_PROJECT 32

void aw_metrics_llm_team(const char *project, const char *team, long long tokens)
{
	const char *calls = family_named("awooop_llm_team_calls_total");
	const char *toks = family_named("awooop_llm_team_tokens_total");
	char l[200], pre[96];
	snprintf(pre, sizeof pre, "project=\"%s\",", project);
	snprintf(l, sizeof l, "%steam=\"%s\"", pre, team);
	pthread_mutex_lock(&mu);
	/* a team not seen yet in the project takes a series only while the
	 * project has fewer than TEAMS_PER_PROJECT: key admins choose teams */
	int seen = 0, known = 0;
	for (series *s = head; s && !known; s = s->next)
		if (s->family == calls && !strncmp(s->labels, pre, strlen(pre))) {
			seen++;
			known = !strcmp(s->labels, l);
		}
	if (!known && seen >= TEAMS_PER_PROJECT)
		snprintf(l, sizeof l, "%steam=\"_other\"", pre);
	series *c = get(calls, COUNTER, l);
	if (c)
		c->value += 1;
	if ((c = get(toks, COUNTER, l)))
		c->value += (double)(tokens > 0 ? tokens : 0);
	pthread_mutex_unlock(&mu);
}

void aw_metrics_llm_breaker(const char *upstream, int state)
{
	char l[160];
	snprintf(l, sizeof l, "upstream=\"%s\"", upstream);
	pthread_mutex_lock(&mu);
	series *g = get(families[15].family, GAUGE, l);
	if (g)
		g->value = state;
	pthread_mutex_unlock(&mu);
}

void aw_metrics_budget(const char *project, const char *event, double tokens)
{
	char l[160];
	snprintf(l, sizeof l, "project=\"%s\",event=\"%s\"", project, event);
	pthread_mutex_lock(&mu);
	series *c = get(families[16].family, COUNTER, l);
	if (c)
		c->value += 1;
	if (tokens > 0 && (c = get(families[17].family, COUNTER, l)))
		c->value += tokens;
	pthread_mutex_unlock(&mu);
}

void aw_metrics_mcp_call(const char *project, const char *tool, const char *outcome, double seconds,
			 int gate, const char *code)
{
	char l[200];
	pthread_mutex_lock(&mu);
	snprintf(l, sizeof l, "project=\"%s\",tool=\"%s\",outcome=\"%s\"", project, tool, outcome);
	series *c = get(families[18].family, COUNTER, l);
	if (c)
		c->value += 1;
	snprintf(l, sizeof l, "project=\"%s\"", project);
	observe(get(families[19].family, HISTOGRAM, l), seconds);
	if (gate > 0) {
		snprintf(l, sizeof l, "project=\"%s\",gate=\"%d\",code=\"%s\"", project, gate,
			 code);
		if ((c = get(families[20].family, COUNTER, l)))
			c->value += 1;
	}
	pthread_mutex_unlock(&mu);
}

void aw_metrics_channel(const char *project, const char *direction, const char *outcome)
{
	char l[200];
	snprintf(l, sizeof l, "project=\"%s\",direction=\"%s\",outcome=\"%s\"", project, direction,
		 outcome);
	counter_add(21, l, 1);
}

void aw_metrics_channel_leader(int leader)
{
	pthread_mutex_lock(&mu);
	series *g = get(families[22].family, GAUGE, "");
	if (g)
		g->value = leader;
	pthread_mutex_unlock(&mu);
}

static void count(int family, const char *label, const char *value)
{
	char l[120];
	snprintf(l, sizeof l, "%s=\"%.60s\"", label, value);
	pthread_mutex_lock(&mu);
	series *c = get(families[family].family, COUNTER, l);
	if (c)
		c->value += 1;
	pthread_mutex_unlock(&mu);
}

void aw_metrics_policy_change(const char *source)
{
	count(23, "source", source);
}

void aw_metrics_fleet_report(int ok)
{
	count(24, "outcome", ok ? "ok" : "failed");
}

void aw_metrics_loop_tick(const char *loop)
{
	char l[160];
	pthread_mutex_lock(&mu);
	snprintf(l, sizeof l, "loop=\"%s\"", loop);
	series *g = get(families[4].family, GAUGE, l);
	if (g)
		g->value = (double)aw_clock_wall_ms() / 1000.0;
	pthread_mutex_unlock(&mu);
}

/* A gauge that leaves the text at expires_ms (0: never). */
static void gauge(int family, const char *labels, double v, int64_t expires_ms)
{
	pthread_mutex_lock(&mu);
	series *g = get(families[family].family, GAUGE, labels);
	if (g) {
		g->value = v;
		g->expires_ms = expires_ms;
	}
	pthread_mutex_unlock(&mu);
}

void aw_metrics_llm_emergency(double granted, double cap, int64_t day_end_ms)
{
	gauge(25, "", granted, day_end_ms);
	gauge(26, "", cap, day_end_ms);
}

#define BUDGET_RATIO_TTL_MS (15 * 60 * 1000LL)
void aw_metrics_budget_used(const char *project, double ratio)
{
	char l[120];
	snprintf(l, sizeof l, "project=\"%s\"", project);
	gauge(27, l, ratio, aw_clock_wall_ms() + BUDGET_RATIO_TTL_MS);
}

void aw_metrics_audit_verify(const char *project, int intact)
{
	char l[120];
	snprintf(l, sizeof l, "project=\"%s\"", project);
	gauge(28, l, intact, 0);
}

void aw_metrics_mcp_stdio_restart(const char *project)
{
	char l[120];
	snprintf(l, sizeof l, "project=\"%s\"", project);
	counter_add(29, l, 1);
}

void aw_metrics_bus_connected(int connected)
{
	gauge(30, "", connected, 0);
}

void aw_metrics_llm_inflight(const char *project, int calls)
{
	char l[120];
	snprintf(l, sizeof l, "project=\"%s\"", project);
	gauge(31, l, calls, 0);
}

void aw_metrics_budget_cost(const char *project, long long micro_usd)
{
	char l[120];
	snprintf(l, sizeof l, "project=\"%s\"", project);
	pthread_mutex_lock(&mu);
	series *c = get(families[32].family, COUNTER, l);
	if (c)
		c->value += (double)micro_usd / 1e6;
	pthread_mutex_unlock(&mu);
}

void aw_metrics_run_finished(const char *project, const char *queue, const char *outcome, double n)
{
	static const char *const outcomes[] = {"succeeded", "failed", "cancelled", "suggested"};
	const char *family = families[33].family;
	char l[200];
	snprintf(l, sizeof l, "project=\"%s\",queue=\"%s\",outcome=\"%s\"", project, queue,
		 outcome);
	pthread_mutex_lock(&mu);
	series *c = head;
	while (c && (c->family != family || strcmp(c->labels, l)))
		c = c->next;
	/* a queue's first count: its four series start together at 0, so its
	 * first failure is an increase of its failed series, not the series
	 * appearing at 1 (which increase() cannot see) */
	for (size_t i = 0; !c && i < sizeof outcomes / sizeof outcomes[0]; i++) {
		char o[200];
		snprintf(o, sizeof o, "project=\"%s\",queue=\"%s\",outcome=\"%s\"", project, queue,
			 outcomes[i]);
		get(family, COUNTER, o);
	}
	if (!c)
		c = get(family, COUNTER, l);
	if (c)
		c->value += n;
	pthread_mutex_unlock(&mu);
}

/* Replaces every series of a gauge family: the n given (labels "a=x,b=y"
 * from two label names and their values) get their value, the others leave
 * the text (kept in the list: a later set may bring them back). */
static void gauge_replace(int family, const char *la, const char *const *va, const char *lb,
			  const char *const *vb, const double *v, int n, int64_t expires_ms)
{
	char l[200];
	pthread_mutex_lock(&mu);
	for (series *s = head; s; s = s->next)
		if (s->family == families[family].family)
			s->expires_ms = 1; /* long past: out of the text */
	for (int i = 0; i < n; i++) {
		snprintf(l, sizeof l, "%s=\"%s\",%s=\"%s\"", la, va[i], lb, vb[i]);
		series *g = get(families[family].family, GAUGE, l);
		if (g) {
			g->value = v[i];
			g->expires_ms = expires_ms;
		}
	}
	pthread_mutex_unlock(&mu);
}

void aw_metrics_run_queue_ages(const char *const *projects, const char *const *queues,
			       const double *ages, int n)
{
	gauge_replace(34, "project", projects, "queue", queues, ages, n, 0);
}

void aw_metrics_policy_lag(const char *const *projects, const char *const *families_,
			   const double *lag, int n, int64_t expires_ms)
{
	gauge_replace(35, "project", projects, "family", families_, lag, n, expires_ms);
}

void aw_metrics_run_duration(const char *project, const char *queue, const char *outcome,
			     double seconds)
{
	char l[200];
	snprintf(l, sizeof l, "project=\"%s\",queue=\"%s\",outcome=\"%s\"", project, queue,
		 outcome);
	pthread_mutex_lock(&mu);
	series *h = get(families[37].family, HISTOGRAM, l);
	if (h && h->bounds != run_buckets && !h->count) {
		h->bounds = run_buckets;
		h->nb = sizeof run_buckets / sizeof run_buckets[0];
	}
	observe(h, seconds < 0 ? 0 : seconds);
	pthread_mutex_unlock(&mu);
}

void aw_metrics_run_queue_depths(const char *const *projects, const char *const *queues,
				 const double *depths, int n)
{
	gauge_replace(38, "project", projects, "queue", queues, depths, n, 0);
}

void aw_metrics_redact_custom_limited(const char *project, int n)
{
	char l[120];
	snprintf(l, sizeof l, "project=\"%s\"", project);
	counter_add(36, l, n);
}

/* ---- the process (the standard names Prometheus' client libraries use, read
 * from /proc/self at each scrape) and the build */

/* The value after the command (field 2, in parentheses: it may hold spaces)
 * of /proc/self/stat, field `field` (1-based as in proc(5)); 0 if unread. */
static double stat_field(const char *stat, int field)
{
	const char *p = strrchr(stat, ')');
	if (!p)
		return 0;
	p++;
	for (int f = 3; f < field && *p; f++) {
		while (*p == ' ')
			p++;
		while (*p && *p != ' ')
			p++;
	}
	return strtod(p, NULL);
}

static double boot_time_s(void)
{
	FILE *f = fopen("/proc/stat", "re");
	char line[256];
	double bt = 0;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "btime ", 6)) {
			bt = strtod(line + 6, NULL);
			break;
		}
	if (f)
		fclose(f);
	return bt;
}

/* /proc/self/stat into buf (cap bytes; "" if unread). */
static void read_stat(char *buf, size_t cap)
{
	buf[0] = '\0';
	FILE *f = fopen("/proc/self/stat", "re");
	if (!f)
		return;
	size_t n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* The start: constant, read once (the boot time + the ticks since boot). */
static double start_s;
static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static void read_start(void)
{
	char stat[1024];
	read_stat(stat, sizeof stat);
	long tick = sysconf(_SC_CLK_TCK);
	if (tick > 0)
		start_s = boot_time_s() + stat_field(stat, 22) / (double)tick;
}

static void render_process(aw_buf *b)
{
	char stat[1024];
	read_stat(stat, sizeof stat);
	pthread_once(&start_once, read_start);
	struct rusage ru;
	double cpu = 0;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		      (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	int fds = 0;
	DIR *d = opendir("/proc/self/fd");
	for (struct dirent *e; d && (e = readdir(d));)
		fds += e->d_name[0] != '.';
	if (d) {
		closedir(d);
		fds--; /* the directory's own */
	}
	struct rlimit rl = {0};
	getrlimit(RLIMIT_NOFILE, &rl);
	static const char *const help[][3] = {
		{"process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
		 "counter"},
		{"process_open_fds", "Number of open file descriptors.", "gauge"},
		{"process_max_fds", "Maximum number of open file descriptors.", "gauge"},
		{"process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge"},
		{"process_resident_memory_bytes", "Resident memory size in bytes.", "gauge"},
		{"process_start_time_seconds",
		 "Start time of the process since unix epoch in seconds.", "gauge"},
	};
	double v[] = {cpu,
		      fds,
		      rl.rlim_cur == RLIM_INFINITY ? -1 : (double)rl.rlim_cur,
		      stat_field(stat, 23),
		      stat_field(stat, 24) * (double)sysconf(_SC_PAGESIZE),
		      start_s};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		aw_buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", help[i][0], help[i][1], help[i][0],
			    help[i][2]);
		if (v[i] >= 0)
			aw_buf_addf(b, "%s %.17g\n", help[i][0], v[i]);
	}
}

/* awooop_build_info: a constant 1 labelled with what this binary is. */
static void render_build(aw_buf *b)
{
#if defined(__clang__)
	static const char compiler[] = "clang " __clang_version__;
#elif defined(__GNUC__)
	static const char compiler[] = "gcc " __VERSION__;
#else
	static const char compiler[] = "other";
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	static const char sanitized[] = "yes";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
	static const char sanitized[] = "yes";
#else
	static const char sanitized[] = "no";
#endif
#else
	static const char sanitized[] = "no";
#endif
	char c[64]; /* the version numbers only: a label value, no quotes */
	size_t o = 0;
	for (const char *p = compiler; *p && o + 1 < sizeof c; p++)
		if (*p != '"' && *p != '\\' && *p != '(')
			c[o++] = *p;
		else if (*p == '(')
			break;
	while (o && c[o - 1] == ' ')
		o--;
	c[o] = '\0';
	aw_buf_addf(b,
		    "# HELP awooop_build_info A constant 1 labelled with the build: version,"
		    " compiler, sanitized (a sanitizer build).\n# TYPE awooop_build_info gauge\n"
		    "awooop_build_info{version=\"%s\",compiler=\"%s\",sanitized=\"%s\"} 1\n",
		    AWOOOP_VERSION, c, sanitized);
}

/* The index of a family by name (the families added last are found by name:
 * a number would shift under a neighbour's addition). */
static int family_of(const char *name)
{
	for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
		if (!strcmp(families[i].family, name))
			return (int)i;
	return -1;
}

void aw_metrics_otel_spans(const char *outcome, double n)
{
	char l[64];
	int f;
	if (!strcmp(outcome, "exported")) {
		f = family_of("awooop_otel_spans_exported_total");
		l[0] = '\0';
	} else {
		f = family_of("awooop_otel_spans_dropped_total");
		snprintf(l, sizeof l, "reason=\"%s\"", outcome);
	}
	if (f >= 0)
		counter_add(f, l, n);
}

void aw_metrics_otel_export(const char *outcome)
{
	char l[64];
	snprintf(l, sizeof l, "outcome=\"%s\"", outcome);
	int f = family_of("awooop_otel_exports_total");
	if (f >= 0)
		counter_add(f, l, 1);
}

#define METRICS_MAX ((size_t)64 << 20)
char *aw_metrics_render(void)
{
	aw_buf b = AW_BUF_INIT(METRICS_MAX);
	int64_t now = aw_clock_wall_ms();
	pthread_mutex_lock(&mu);
	for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
		aw_buf_addf(&b, "# HELP %s %s\n# TYPE %s %s\n", families[f].family,
			    families[f].help, families[f].family, families[f].type);
		for (series *s = head; s; s = s->next) {
			if (s->family != families[f].family ||
			    (s->expires_ms && now >= s->expires_ms))
				continue;
			const char *l = s->labels, *sep = l[0] ? "," : "";
			if (s->kind != HISTOGRAM) {
				if (l[0])
					aw_buf_addf(&b, "%s{%s} %.17g\n", s->family, l, s->value);
				else
					aw_buf_addf(&b, "%s %.17g\n", s->family, s->value);
				continue;
			}
			for (size_t i = 0; i < s->nb; i++)
				aw_buf_addf(&b, "%s_bucket{%s%sle=\"%g\"} %llu\n", s->family, l,
					    sep, s->bounds[i], s->bucket[i]);
			aw_buf_addf(&b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", s->family, l, sep,
				    s->count);
			if (l[0])
				aw_buf_addf(&b, "%s_sum{%s} %.9f\n%s_count{%s} %llu\n", s->family,
					    l, s->value, s->family, l, s->count);
			else
				aw_buf_addf(&b, "%s_sum %.9f\n%s_count %llu\n", s->family, s->value,
					    s->family, s->count);
		}
	}
	pthread_mutex_unlock(&mu);
	render_process(&b);
	render_build(&b);
	if (aw_buf_err(&b)) {
		aw_buf_free(&b);
		return NULL;
	}
	return aw_buf_take(&b);
}

void aw_metrics_reset(void)
{
	pthread_mutex_lock(&mu);
	while (head) {
		series *n = head->next;
		free(head);
		head = n;
	}
	pthread_mutex_unlock(&mu);
}
