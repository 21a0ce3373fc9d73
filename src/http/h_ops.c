/*
 * h_ops.c - operational endpoints: liveness, readiness (store and, when
 * configured, Redis reachable) and Prometheus metrics. No authentication: they
 * reveal no tenant data.
 */
#include <stdlib.h>
#include <string.h>

#include "awooop/bus.h"
#include "awooop/redis.h"
#include "awooop/metrics.h"
#include "http_internal.h"

void aw_h_healthz(aw_req *r)
{
	aw_reply_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

void aw_h_readyz(aw_req *r)
{
	aw_error err = {0};
	aw_err e = aw_store_ping(r->store, &err);
	if (!e)
		e = aw_store_check_schema(r->store, &err);
	if (!e && r->opts->redis_url)
		e = aw_redis_ping(r->opts->redis_url, 1000, &err);
	if (e) {
		aw_reply_problem(r, e, &err);
		return;
	}
	aw_reply_json(r, 200,
		      json_pack("{s:s, s:s, s:s}", "status", "ready", "store",
				aw_store_backend(r->store), "redis",
				r->opts->redis_url ? "ok" : "not configured"));
}

void aw_h_metrics(aw_req *r)
{
	char *text = aw_metrics_render();
	if (!text) {
		aw_reply_problem(r, AW_E_NOMEM, NULL);
		return;
	}
	aw_reply_text(r, 200, "text/plain; version=0.0.4; charset=utf-8", text);
	free(text);
}

/* docs/api/openapi.json, embedded at build time (cmake/embed_files.cmake). */
extern const struct {
	const char *name;
	const char *text;
} aw_api_docs[];

void aw_h_openapi(aw_req *r)
{
	for (int i = 0; aw_api_docs[i].name; i++)
		if (!strcmp(aw_api_docs[i].name, "openapi"))
			return aw_reply_text(r, 200, "application/json", aw_api_docs[i].text);
	aw_reply_problem(r, AW_E_INTERNAL, NULL);
}
