/*
 * decode.c - request-body decoders: bytes in, a validated request struct out.
 * Pure functions with no I/O, so the fuzz target (fuzz/fuzz_body.c) can drive
 * the whole body path: strict JSON parse, unknown-field check, field types and
 * identifier grammars.
 */
#include <stdio.h>
#include <string.h>

#include "awooop/ident.h"
#include "awooop/json.h"
#include "http_internal.h"

aw_err aw_decode_project_create(const char *body, size_t len, aw_project_create_req *out,
				aw_error *err)
{
	static const char *const allowed[] = {"id", NULL};
	json_t *o = NULL;
	const char *id = NULL;
	aw_err e = aw_json_parse_object(body, len, &o, err);
	if (e)
		return e;
	if ((e = aw_json_only(o, allowed, err)) || (e = aw_json_str(o, "id", 1, &id, err)))
		goto out;
	if (!aw_ident_project_ok(id)) {
		e = aw_fail_at(err, AW_E_TENANT_SLUG, "/id",
			       "project id must match [a-z0-9][a-z0-9_-]{1,62}");
		goto out;
	}
	snprintf(out->id, sizeof out->id, "%s", id);
out:
	json_decref(o);
	return e;
}

aw_err aw_decode_key_create(const char *body, size_t len, aw_key_create_req *out, aw_error *err)
{
	static const char *const allowed[] = {"name", "scope", NULL};
	json_t *o = NULL;
	const char *name = NULL, *scope = NULL;
	aw_err e = aw_json_parse_object(body, len, &o, err);
	if (e)
		return e;
	if ((e = aw_json_only(o, allowed, err)) || (e = aw_json_str(o, "name", 1, &name, err)) ||
	    (e = aw_json_str(o, "scope", 1, &scope, err)))
		goto out;
	if (!aw_ident_name_ok(name)) {
		e = aw_fail_at(err, AW_E_REQ_INVALID, "/name",
			       "name must match [A-Za-z0-9][A-Za-z0-9._-]{0,62}");
		goto out;
	}
	if (aw_scope_parse(scope, &out->scope) != 0) {
		e = aw_fail_at(err, AW_E_KEY_SCOPE, "/scope",
			       "scope must be one of platform-admin, project-admin, operator,"
			       " worker, reader");
		goto out;
	}
	snprintf(out->name, sizeof out->name, "%s", name);
out:
	json_decref(o);
	return e;
}

aw_err aw_decode_contract_body(const char *body, size_t len, json_t **out, aw_error *err)
{
	static const char *const allowed[] = {"body", NULL};
	json_t *o = NULL;
	aw_err e = aw_json_parse_object(body, len, &o, err);
	if (e)
		return e;
	if (!(e = aw_json_only(o, allowed, err))) {
		json_t *b = json_object_get(o, "body");
		if (!json_is_object(b))
			e = aw_fail_at(err, AW_E_REQ_INVALID, "/body", "/body must be an object");
		else
			*out = json_incref(b);
	}
	json_decref(o);
	return e;
}
