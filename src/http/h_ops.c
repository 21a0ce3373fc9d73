/*
 * h_ops.c - operational endpoints: liveness, readiness (store and, when
 * configured, Redis reachable) and Prometheus metrics. No authentication: they
 * reveal no tenant data.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/bus.h"
#include "awooop/log.h"
#include "awooop/redis.h"
#include "awooop/metrics.h"
#include "http_internal.h"

void h_healthz(aw_req *r)
{
	http_reply_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

void h_readyz(aw_req *r)
{
	aw_error err = {0};
	aw_err e = aw_store_ping(r->store, &err);
	if (!e)
		e = aw_store_check_schema(r->store, &err);
	if (!e && r->opts->redis_url)
		e = aw_redis_ping(r->opts->redis_url, 1000, &err);
	if (e) { /* open: the detail (addresses, ports) goes to the log only */
		aw_log(AW_LOG_WARN, &r->ctx, "not ready", "code", aw_err_code(e), "detail", err.msg,
		       NULL);
		aw_error bare = {0};
		aw_fail(&bare, e, "not ready: see the server's log");
		reply_problem(r, e, &bare);
		return;
	}
	http_reply_json(r, 200,
			json_pack("{s:s, s:s, s:s}", "status", "ready", "store",
				  aw_store_backend(r->store), "redis",
				  r->opts->redis_url ? "ok" : "not configured"));
}

/* Every tenant's series (projects, routes, tools, token counts): a key of
 * the platform project, at least a reader's (Prometheus: a bearer token
 * file). */
void h_metrics(aw_req *r)
{
	aw_ctx scoped;
	if (project_or_reply(r, AW_PLATFORM_PROJECT, AW_SCOPE_READER, &scoped))
		return;
	char *text = aw_metrics_render();
	if (!text) {
		reply_problem(r, AW_E_NOMEM, NULL);
		return;
	}
	reply_text(r, 200, "text/plain; version=0.0.4; charset=utf-8", text);
	free(text);
}

/* docs/api/openapi.json and console/, embedded at build time
 * (cmake/embed_files.cmake). */
typedef struct {
	const char *name;
	const char *text;
} embedded;
extern const embedded aw_api_docs[], aw_console_files[];

void h_openapi(aw_req *r)
{
	for (int i = 0; aw_api_docs[i].name; i++)
		if (!strcmp(aw_api_docs[i].name, "openapi"))
			return reply_text(r, 200, "application/json", aw_api_docs[i].text);
	reply_problem(r, AW_E_INTERNAL, NULL);
}

/* GET /: a browser that opens the server's address lands on the console. */
void h_root(aw_req *r)
{
	req_header(r, "Location", "/console/");
	reply_empty(r, 302);
}

/* GET /console and /console/{file}: the web console's files (console/),
 * built into the binary. A strict Content-Security-Policy: scripts and styles
 * only from these files, no inline code, connections only to this origin. */
void h_console(aw_req *r)
{
	const char *file = r->nsegs > 1 && r->segs[1][0] ? r->segs[1] : "index.html";
	static const struct {
		const char *ext, *ctype;
	} types[] = {{".html", "text/html; charset=utf-8"},
		     {".js", "text/javascript; charset=utf-8"},
		     {".css", "text/css; charset=utf-8"},
		     {".svg", "image/svg+xml"}};
	const char *ctype = NULL, *dot = strrchr(file, '.');
	for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
		if (!strcmp(dot, types[i].ext))
			ctype = types[i].ctype;
	for (int i = 0; ctype && aw_console_files[i].name; i++)
		if (!strcmp(aw_console_files[i].name, file)) {
			req_header(r, "Content-Security-Policy",
				   "default-src 'none'; script-src 'self'; style-src 'self'; "
				   "connect-src 'self'; img-src 'self'; base-uri 'none'; "
				   "form-action 'none'; frame-ancestors 'none'");
			return reply_text(r, 200, ctype, aw_console_files[i].text);
		}
	aw_error err;
	aw_fail(&err, AW_E_REQ_ROUTE, "no such console file");
	reply_problem(r, AW_E_REQ_ROUTE, &err);
}
