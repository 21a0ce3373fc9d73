/*
 * decode.c - request-body decoders: bytes in, a validated request struct out.
 * Pure functions with no I/O, so the fuzz target (fuzz/fuzz_body.c) can drive
 * the whole body path: strict JSON parse, unknown-field check, field types and
 * identifier grammars.
 */
#include <stdio.h>
#include <string.h>

#include "awooop/crypto.h"
#include "awooop/ident.h"
#include "awooop/json.h"
#include "awooop/str.h"
#include "http_internal.h"

aw_err decode_project_create(const char *body, size_t len, aw_project_create_req *out,
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
	if (!aw_ident_project_ok(id) || AW_STR_COPY(out->id, id) < 0)
		e = aw_fail_at(err, AW_E_TENANT_SLUG, "/id",
			       "project id must match [a-z0-9][a-z0-9_-]{1,62}");
out:
	json_decref(o);
	return e;
}

aw_err decode_key_create(const char *body, size_t len, aw_key_create_req *out, aw_error *err)
{
	/* the rest of the members are a virtual key's limits (tenancy.h) */
	static const char *const own[] = {"name", "scope", NULL};
	static const char *const allowed[] = {"name",	"scope",      "models",	  "rpm", "tpm",
					      "budget", "expires_at", "metadata", NULL};
	json_t *o = NULL;
	const char *name = NULL, *scope = NULL;
	aw_err e = aw_json_parse_object(body, len, &o, err);
	if (e)
		return e;
	if ((e = aw_json_only(o, allowed, err)) || (e = aw_json_str(o, "name", 1, &name, err)) ||
	    (e = aw_json_str(o, "scope", 1, &scope, err)) ||
	    (e = aw_key_limits_parse(o, own, &out->limits, err)))
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
	if (AW_STR_COPY(out->name, name) < 0) /* aw_ident_name_ok above: at most 63 */
		e = aw_fail_at(err, AW_E_REQ_INVALID, "/name", "name is too long");
out:
	json_decref(o);
	return e;
}

aw_err decode_key_update(const char *body, size_t len, json_t **out, aw_error *err)
{
	static const char *const allowed[] = {"models",	    "rpm",	"tpm", "budget",
					      "expires_at", "metadata", NULL};
	*out = NULL;
	json_t *o = NULL;
	aw_err e = aw_json_parse_object(body, len, &o, err);
	if (!e && !(e = aw_json_only(o, allowed, err))) {
		/* each member alone, as far as it can be checked without the
		 * key's limits it merges into (a budget's period alone is fine) */
		const char *k;
		json_t *v;
		json_object_foreach (o, k, v) {
			if (!strcmp(k, "budget") && json_is_object(v))
				continue;
			json_t *one = json_pack("{s:O}", k, v);
			aw_key_limits l;
			e = one ? aw_key_limits_parse(one, NULL, &l, err)
				: aw_fail(err, AW_E_NOMEM, "out of memory");
			json_decref(one);
			if (e)
				break;
		}
	}
	if (e)
		json_decref(o);
	else
		*out = o;
	return e;
}

aw_err decode_contract_body(const char *body, size_t len, json_t **out, aw_error *err)
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

aw_err http_decode_path(const char *u, aw_buf *segbuf, const char **segs, int *nsegs, aw_error *err)
{
	size_t n = strcspn(u, "?#");
	*segbuf = (aw_buf)AW_BUF_INIT(AW_HTTP_PATH_MAX + AW_HTTP_MAX_SEGS + 1);
	*nsegs = 0;
	if (n > AW_HTTP_PATH_MAX)
		return aw_fail(err, AW_E_REQ_URI_LONG, "the path is longer than %d bytes",
			       AW_HTTP_PATH_MAX);
	size_t starts[AW_HTTP_MAX_SEGS + 1];
	for (size_t i = 0; i < n;) {
		if (u[i] == '/') {
			i++;
			continue;
		}
		if (*nsegs == AW_HTTP_MAX_SEGS) {
			*nsegs = AW_HTTP_MAX_SEGS + 1; /* matches no route */
			break;
		}
		starts[(*nsegs)++] = segbuf->len;
		for (; i < n && u[i] != '/'; i++) {
			char c = u[i];
			if (c == '%') {
				int hi = i + 2 < n ? aw_hex_digit(u[i + 1]) : -1;
				int lo = i + 2 < n ? aw_hex_digit(u[i + 2]) : -1;
				if (hi < 0 || lo < 0) {
					*nsegs = 0; /* a refused path has no segments */
					return aw_fail(err, AW_E_REQ_PATH,
						       "a broken %%-escape in the path");
				}
				c = (char)(hi << 4 | lo);
				if (c == '\0' || c == '/') {
					*nsegs = 0;
					return aw_fail(err, AW_E_REQ_PATH,
						       "an encoded %s in a path segment",
						       c ? "'/'" : "NUL");
				}
				i += 2;
			}
			aw_buf_add(segbuf, &c, 1);
		}
		aw_buf_add(segbuf, "", 1);
	}
	if (aw_buf_err(segbuf)) {
		*nsegs = 0;
		return aw_fail(err, aw_buf_err(segbuf), "the path could not be decoded");
	}
	for (int k = 0; k < *nsegs && k < AW_HTTP_MAX_SEGS; k++)
		segs[k] = segbuf->p + starts[k];
	return AW_OK;
}
