/*
 * req_span.c - an API request's span (otel.h), described when the request
 * completes: a SERVER span under the caller's traceparent, named by the
 * method and the route template (never the path as sent: a path holds ids
 * and a hostile client's words), with the HTTP semantic conventions'
 * attributes and the project the key acts for. A 5xx, or a request that
 * ended without an answer, is an error; a 4xx is the client's, not ours.
 */
#include <stdio.h>
#include <string.h>

#include "awooop/otel.h"
#include "http_internal.h"

void http_req_span(const aw_req *r, int status)
{
	if (!aw_otel_on())
		return;
	static const char *const known[] = {"GET",   "POST", "PUT",    "DELETE",
					    "PATCH", "HEAD", "OPTIONS"};
	const char *method = "_OTHER";
	for (size_t i = 0; r->method && i < sizeof known / sizeof known[0]; i++)
		if (!strcmp(r->method, known[i]))
			method = known[i];
	int routed = r->route && strcmp(r->route, "unmatched") != 0;
	aw_span *s =
		aw_span_begin("HTTP", AW_SPAN_SERVER, &r->ctx.trace, r->caller_span, 1, r->t0_ns);
	aw_span_name(s, strcmp(method, "_OTHER") ? method : "HTTP", routed ? r->route : NULL);
	aw_span_str(s, "http.request.method", method);
	if (routed)
		aw_span_str(s, "http.route", r->route);
	if (status > 0)
		aw_span_int(s, "http.response.status_code", status);
	aw_span_str(s, "url.scheme", r->opts && r->opts->tls_cert ? "https" : "http");
	aw_span_str(s, "awooop.request_id", r->ctx.request_id);
	if (r->authenticated)
		aw_span_project(s, r->ctx.project);
	if (status >= 500 || status == 0) {
		char type[16];
		snprintf(type, sizeof type, "%d", status);
		aw_span_error(s, status ? type : "_OTHER",
			      status ? NULL : "the request ended without an answer");
	}
	aw_span_end(s);
}
