/*
 * metrics.h - process-wide counters and histograms rendered in the Prometheus
 * text exposition format (version 0.0.4) at GET /metrics.
 * Thread-safe; label values must be bounded sets (route templates, not paths).
 */
#ifndef AWOOOP_METRICS_H
#define AWOOOP_METRICS_H

#include <stdint.h>

#include "awooop/err.h"

void aw_metrics_http_observe(const char *method, const char *route, int status, double seconds);
void aw_metrics_store_observe(const char *backend, double seconds, aw_err result);
/* The outbox relay: one publish's latency; backlog size and age. */
void aw_metrics_relay_publish(double seconds, int ok);
void aw_metrics_outbox_backlog(double undelivered, double oldest_age_s);
/* Run runtime counters; event is one of claimed, step, succeeded, failed,
 * reaped, empty_claim, approval_expired, pruned, scheduled (runs a schedule
 * started), schedule_raced (a due schedule another worker was firing or had
 * fired). */
void aw_metrics_run_event(const char *event, double n);
/* Seconds since the epoch of a background loop's last successful tick. */
void aw_metrics_loop_tick(const char *loop);
/* A connection shut down for missing its deadline ("head" or "request"). */
void aw_metrics_http_cut(const char *reason);
/* LLM gateway: one finished call; an event (failover, schema_retry,
 * pool_reset, refused); an upstream's breaker state (0 closed, 1 open, 2
 * half-open). Labels are policy route names and upstream names, never what a
 * client sent. */
void aw_metrics_llm_call(const char *project, const char *route, const char *upstream,
			 const char *outcome, double seconds, long long tokens_in,
			 long long tokens_out);
void aw_metrics_llm_event(const char *event, const char *upstream);
/* A finished call of a virtual key naming a team (a checked slug, tenancy.h):
 * one call and its tokens under {project, team}; a project's teams past 32
 * in this process count as team="_other" (bounded cardinality: key admins
 * choose teams; a user is never a label). */
void aw_metrics_llm_team(const char *project, const char *team, long long tokens);
void aw_metrics_llm_breaker(const char *upstream, int state);
/* Token budget: an event of project (reserved, clamped, refused, suspended,
 * cut, reaped, settled) and the tokens it moved (0 for none). */
void aw_metrics_budget(const char *project, const char *event, double tokens);
/* MCP gateway: one tools/call (tool: the federated name of a tool of the
 * project's contract, or "-" when the name matched none; gate > 0 with
 * code: the refusal). */
void aw_metrics_mcp_call(const char *project, const char *tool, const char *outcome, double seconds,
			 int gate, const char *code);
/* Returns a malloc'd text document; caller frees. NULL on out of memory.
 * Besides the series above: the process_* families (CPU, memory, file
 * descriptors, start time, read from /proc/self at each call) and
 * awooop_build_info{version,compiler,sanitized} 1. */
char *aw_metrics_render(void);
/* The channel hub: one inbound or outbound event; leadership. */
void aw_metrics_channel(const char *project, const char *direction, const char *outcome);
void aw_metrics_channel_leader(int leader);
/* The fleet: a revision learned by the policy cache (source: bus, fallback,
 * guard, resync); a report written. */
void aw_metrics_policy_change(const char *source);
void aw_metrics_fleet_report(int ok);
/* Alerting (deploy/prometheus/alerts.yml). The emergency cloud model's
 * daily cap: calls granted this UTC day (Redis: the cluster's count) and the
 * cap; both series leave the text at day_end_ms (the count starts again). */
void aw_metrics_llm_emergency(double granted, double cap, int64_t day_end_ms);
/* A project's settled share of its period's limit (the larger of tokens and
 * cost); the series leaves the text 15 minutes after its last settlement. */
void aw_metrics_budget_used(const char *project, double ratio);
/* A finished audit chain verification: intact 1, a break found 0. */
void aw_metrics_audit_verify(const char *project, int intact);
/* An MCP stdio upstream's child exited and is restarted (the provider name
 * is the tenant's: the project only). */
void aw_metrics_mcp_stdio_restart(const char *project);
/* The Redis bus subscription: 1 up, 0 down. */
void aw_metrics_bus_connected(int connected);
/* The LLM gateway's calls in flight of a project (in this process). */
void aw_metrics_llm_inflight(const char *project, int calls);
/* A settlement's cost (micro-USD; exported in USD). */
void aw_metrics_budget_cost(const char *project, long long micro_usd);
/* Runs of a project's queue that reached a final state (outcome:
 * succeeded, failed, cancelled, suggested). The queue's four series start at
 * 0 together. queue is a declared name ([A-Za-z0-9._-], at most
 * AW_RUN_QUEUES_MAX + "default" a project), never a request's own word. */
void aw_metrics_run_finished(const char *project, const char *queue, const char *outcome, double n);
/* The seconds the oldest runnable run of each of n queues has waited since
 * it became due: replaces every series of the gauge (a queue not listed has
 * none waiting and leaves the text). */
void aw_metrics_run_queue_ages(const char *const *projects, const char *const *queues,
			       const double *ages, int n);
/* This process's convergence lag per (project, family) it serves (0:
 * converged): replaces every series of the gauge; they leave the text at
 * expires_ms (0: never), so a reporter that stops measuring shows nothing
 * rather than an old value. family is one of the six contract families. */
void aw_metrics_policy_lag(const char *const *projects, const char *const *families,
			   const double *lag, int n, int64_t expires_ms);
/* A run of a project's queue reached a final state (outcome as for
 * aw_metrics_run_finished) seconds after its submission: a histogram of
 * buckets from 0.1 s to a day. */
void aw_metrics_run_duration(const char *project, const char *queue, const char *outcome,
			     double seconds);
/* How many runnable runs each of n queues has due: replaces every series of
 * the gauge (a queue not listed has none and leaves the text). */
void aw_metrics_run_queue_depths(const char *const *projects, const char *const *queues,
				 const double *depths, int n);
/* n custom redaction patterns of project stopped by their limits or budget
 * (redact.h). */
void aw_metrics_redact_custom_limited(const char *project, int n);
/* The OTLP trace exporter: spans by outcome ("exported", or why they were
 * dropped: queue_full, project_share, export_failed, rejected,
 * shutdown); one export
 * request's outcome (ok, retry, failed). */
void aw_metrics_otel_spans(const char *outcome, double n);
void aw_metrics_otel_export(const char *outcome);
/* Forgets every series (tests). */
void aw_metrics_reset(void);

#endif
