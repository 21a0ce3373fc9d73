/*
 * h_redaction.c - /v1/projects/{project}/redaction-patterns: a project's
 * custom redaction patterns (redaction.h). Reading needs operator scope in
 * the project (or a platform admin); writing a platform-admin key - a
 * tenant's own key, whatever its scope, is refused (403).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/json.h"
#include "awooop/redaction.h"
#include "awooop/str.h"
#include "http_internal.h"

static json_t *list_json(const char *project, const aw_redaction_list *l)
{
	json_t *o = json_pack("{s:s, s:I, s:O}", "project", project, "version",
			      (json_int_t)l->version, "patterns", l->patterns);
	if (o) {
		json_object_set_new(o, "updated_at",
				    l->updated_at[0] ? json_string(l->updated_at) : json_null());
		json_object_set_new(o, "updated_by",
				    l->updated_by[0] ? json_string(l->updated_by) : json_null());
	}
	return o;
}

/* GET /v1/projects/{project}/redaction-patterns */
void h_redaction_get(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_OPERATOR, &scoped))
		return;
	aw_redaction_list l;
	aw_err e = aw_redaction_get(r->store, &scoped, &l, &err);
	if (e)
		return reply_problem(r, e, &err);
	http_reply_json(r, 200, list_json(scoped.project, &l));
	aw_redaction_list_clear(&l);
}

/* PUT /v1/projects/{project}/redaction-patterns {"patterns": [...]} */
void h_redaction_put(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_PLATFORM_ADMIN, &scoped) || json_body_or_reply(r))
		return;
	static const char *const fields[] = {"patterns", NULL};
	json_t *body = NULL;
	aw_err e = aw_json_parse_object(r->body, r->body_len, &body, &err);
	if (!e)
		e = aw_json_only(body, fields, &err);
	json_t *list = json_object_get(body, "patterns");
	if (!e && !json_is_array(list))
		e = aw_fail_at(&err, AW_E_REDACT_PATTERN, "/patterns",
			       "patterns is an array of {\"name\", \"pattern\"}");
	aw_redaction_list l = {0};
	if (!e && (e = aw_redaction_set(r->store, &scoped, list, &l, &err)) &&
	    e == AW_E_REDACT_PATTERN) {
		/* the entry's pointer, from the body's root */
		char where[sizeof err.where + 16];
		snprintf(where, sizeof where, "/patterns%s", err.where);
		aw_str_show(err.where, sizeof err.where, where); /* too long: says so */
	}
	json_decref(body);
	if (e)
		return reply_problem(r, e, &err);
	http_reply_json(r, 200, list_json(scoped.project, &l));
	aw_redaction_list_clear(&l);
}
