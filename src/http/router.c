/*
 * router.c - the route table: method + path template -> handler. Templates use
 * {name} for one path segment; handlers read the segment by position. The
 * template string is also the metrics/log label, so label cardinality is fixed.
 */
#include <string.h>

#include "http_internal.h"

static const struct {
	const char *method, *tmpl;
	http_handler h;
	int open; /* AW_AUTH_*: who may call it */
} routes[] = {
	{"GET", "/healthz", h_healthz, AW_AUTH_OPEN},
	{"GET", "/readyz", h_readyz, AW_AUTH_OPEN},
	{"GET", "/metrics", h_metrics, 0},
	{"GET", "/v1/openapi.json", h_openapi, AW_AUTH_OPEN},
	/* open: the console's files; it calls the API with the key typed in */
	{"GET", "/", h_root, AW_AUTH_OPEN},
	{"GET", "/console", h_console, AW_AUTH_OPEN},
	{"GET", "/console/{file}", h_console, AW_AUTH_OPEN},
	{"POST", "/v1/projects", h_projects_create, 0},
	{"POST", "/v1/platform/runs", h_runs_submit, 0},
	{"GET", "/v1/platform/runs", h_runs_list, 0},
	{"POST", "/v1/platform/runs:batch", h_runs_batch, 0},
	{"GET", "/v1/platform/runs/{run_id}", h_run_get, 0},
	{"POST", "/v1/platform/runs/{run_id}/cancel", h_run_cancel, 0},
	{"GET", "/v1/platform/runs/{run_id}/diff/{other}", h_run_diff, 0},
	/* the approval token is the credential, or the approver's own key */
	{"POST", "/v1/platform/runs/{run_id}/approve", h_run_approve, AW_AUTH_KEY_OPTIONAL},
	{"POST", "/v1/platform/approval-tokens", h_approval_mint, 0},
	{"POST", "/v1/platform/approval-tokens:verify", h_approval_verify, 0},
	{"POST", "/v1/chat/completions", h_llm_chat, 0},
	{"GET", "/v1/models", h_llm_models, 0},
	{"POST", "/v1/messages", h_llm_messages, 0},
	{"POST", "/v1/embeddings", h_llm_embeddings, 0},
	{"POST", "/v1/responses", h_llm_responses, 0},
	{"GET", "/v1/whoami", h_whoami, 0},
	{"GET", "/v1/projects", h_projects_list, 0},
	{"GET", "/v1/projects/{project}", h_project_get, 0},
	{"POST", "/v1/projects/{project}/keys", h_keys_create, 0},
	{"GET", "/v1/projects/{project}/keys", h_keys_list, 0},
	{"DELETE", "/v1/projects/{project}/keys/{key_id}", h_key_revoke, 0},
	{"GET", "/v1/projects/{project}/keys/{key_id}", h_key_get, 0},
	{"PATCH", "/v1/projects/{project}/keys/{key_id}", h_key_update, 0},
	{"GET", "/v1/projects/{project}/audit", h_audit_list, 0},
	{"GET", "/v1/projects/{project}/audit/verify", h_audit_verify, 0},
	{"GET", "/v1/projects/{project}/key-migrations", h_key_migrations, 0},
	{"GET", "/v1/projects/{project}/redaction-patterns", h_redaction_get, AW_AUTH_KEY},
	{"PUT", "/v1/projects/{project}/redaction-patterns", h_redaction_put, AW_AUTH_KEY},
	/* the MCP endpoint answers a missing key as JSON-RPC (gate 1) */
	{"POST", "/v1/projects/{project}/mcp", h_mcp_post, AW_AUTH_KEY_SELF},
	{"GET", "/v1/projects/{project}/mcp", h_mcp_get, AW_AUTH_KEY_SELF},
	{"DELETE", "/v1/projects/{project}/mcp", h_mcp_delete, AW_AUTH_KEY_SELF},
	{"POST", "/v1/projects/{project}/channels/{bot}/messages", h_channel_send, 0},
	/* open: Telegram's secret token is the credential */
	{"POST", "/v1/channels/telegram/{project}/{bot}", h_channel_webhook, AW_AUTH_OPEN},
	{"GET", "/v1/projects/{project}/queues", h_queues_list, 0},
	{"PUT", "/v1/projects/{project}/queues/{queue}", h_queue_put, 0},
	{"POST", "/v1/projects/{project}/schedules", h_schedules_create, 0},
	{"GET", "/v1/projects/{project}/schedules", h_schedules_list, 0},
	{"GET", "/v1/projects/{project}/schedules/{schedule}", h_schedule_get, 0},
	{"DELETE", "/v1/projects/{project}/schedules/{schedule}", h_schedule_delete, 0},
	{"GET", "/v1/projects/{project}/budget", h_budget_get, 0},
	{"GET", "/v1/projects/{project}/budget/ledger", h_budget_ledger, 0},
	{"GET", "/v1/projects/{project}/budget/spend", h_budget_spend, 0},
	{"POST", "/v1/projects/{project}/budget/{action}", h_budget_action, 0},
	{"POST", "/v1/projects/{project}/contracts/{family}/{contract}/revisions",
	 h_contract_create, 0},
	{"GET", "/v1/projects/{project}/contracts/{family}/{contract}/revisions", h_contract_list,
	 0},
	{"GET", "/v1/projects/{project}/contracts/{family}/{contract}/revisions/{rev}",
	 h_contract_get, 0},
	{"PUT", "/v1/projects/{project}/contracts/{family}/{contract}/revisions/{rev}",
	 h_contract_update, 0},
	{"GET", "/v1/projects/{project}/contracts/{family}/{contract}/revisions/{rev}/diff/{other}",
	 h_contract_diff, 0},
	{"POST", "/v1/projects/{project}/contracts/{family}/{contract}/revisions/{rev}/{action}",
	 h_contract_action, 0},
	{"POST", "/v1/projects/{project}/contracts/{family}/{contract}/rollback",
	 h_contract_rollback, 0},
	{"GET", "/v1/projects/{project}/contracts/{family}/{contract}/active", h_contract_active,
	 0},
	{"GET", "/v1/projects/{project}/contracts/{family}/{contract}/convergence",
	 h_contract_convergence, 0},
};

static int match(const char *tmpl, aw_req *r)
{
	if (!strcmp(tmpl, "/")) /* the root: no segment at all */
		return r->nsegs == 0;
	int i = 0;
	const char *p = tmpl;
	while (*p) {
		if (*p != '/' || i >= r->nsegs)
			return 0;
		p++;
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (!(p[0] == '{' && p[n - 1] == '}') &&
		    (strlen(r->segs[i]) != n || strncmp(p, r->segs[i], n) != 0))
			return 0;
		i++;
		p += n;
	}
	return i == r->nsegs;
}

int aw_route_at(size_t i, const char **method, const char **tmpl)
{
	if (i >= sizeof routes / sizeof routes[0])
		return 0;
	*method = routes[i].method;
	*tmpl = routes[i].tmpl;
	return 1;
}

http_handler http_route(aw_req *r, aw_err *err)
{
	int path_matched = 0;
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		if (!match(routes[i].tmpl, r))
			continue;
		path_matched = 1;
		r->route = routes[i].tmpl;
		/* HEAD is answered as GET (the server sends the head only) */
		if (strcmp(routes[i].method, r->method) == 0 ||
		    (!strcmp(r->method, "HEAD") && !strcmp(routes[i].method, "GET"))) {
			r->open_route = routes[i].open;
			return routes[i].h;
		}
	}
	*err = path_matched ? AW_E_REQ_METHOD : AW_E_REQ_ROUTE;
	if (!path_matched)
		r->route = "unmatched";
	return NULL;
}
