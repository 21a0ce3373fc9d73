/*
 * nocred.c - no credential in plain text in what every reader of a project
 * sees as written (redact.h, aw_redact_refuse_credentials): run workflows and
 * their input, contract bodies. A credential is named by reference instead
 * ({"secret_ref": "env:NAME"}, or in a contract's reference fields
 * "env:NAME"), resolved in the project's own namespace (secret.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/buf.h"
#include "awooop/json.h"
#include "awooop/redact.h"
#include "awooop/secret.h"

static int credential_class(aw_redact_class c)
{
	return c >= AW_RC_AWS_KEY_ID; /* keys, tokens, URL userinfo, assignments, ... */
}

/* A reference's shape: its own checks (and the resolver's) decide whether it
 * is a good one; it is not a credential written out. */
static int is_ref(const char *v)
{
	return !strncmp(v, "env:", 4) || !strncmp(v, "file:", 5);
}

typedef struct {
	aw_err code;
	int ref_strings;
	aw_buf path;
} scan_ctx;

static aw_err scan(scan_ctx *s, const json_t *v, aw_error *err)
{
	aw_buf *path = &s->path;
	size_t mark = path->len;
	aw_err e = AW_OK;
	if (json_is_string(v)) {
		aw_redact_stats st = {0};
		char *red = NULL;
		if (aw_redact_text(json_string_value(v), json_string_length(v), &red, NULL, &st))
			return aw_fail(err, AW_E_NOMEM, "out of memory");
		free(red);
		for (int c = 0; c < AW_RC__COUNT; c++)
			if (st.count[c] && credential_class((aw_redact_class)c))
				return aw_fail_at(err, s->code, aw_buf_str(path),
						  "%s holds a credential (%s): refer to it with"
						  " {\"secret_ref\": \"env:NAME\"}",
						  aw_buf_str(path),
						  aw_redact_class_label((aw_redact_class)c));
	} else if (json_is_array(v)) {
		for (size_t i = 0; !e && i < json_array_size(v); i++) {
			aw_json_ptr_push_index(path, i);
			e = scan(s, json_array_get(v, i), err);
			aw_buf_truncate(path, mark);
		}
	} else if (json_is_object(v)) {
		json_t *ref = json_object_get(v, "secret_ref");
		if (ref) { /* a reference in the project's own namespace, checked
			      for shape now; resolved where it is used */
			aw_json_ptr_push(path, "secret_ref");
			e = json_is_string(ref)
				    ? aw_secret_tenant_check(json_string_value(ref), err)
				    : aw_fail(err, AW_E_SECRET_REF, "secret_ref must be a string");
			if (e && err)
				snprintf(err->where, sizeof err->where, "%.120s", aw_buf_str(path));
			aw_buf_truncate(path, mark);
			return e;
		}
		const char *k;
		json_t *x;
		json_object_foreach ((json_t *)v, k, x) {
			aw_json_ptr_push(path, k);
			if (aw_redact_sensitive_key(k) && json_is_string(x) &&
			    json_string_length(x) &&
			    !(s->ref_strings && is_ref(json_string_value(x))))
				e = aw_fail_at(err, s->code, aw_buf_str(path),
					       "%s is a credential field: give it as %s",
					       aw_buf_str(path),
					       s->ref_strings ? "a reference (\"env:NAME\")"
							      : "{\"secret_ref\": \"env:NAME\"}");
			else
				e = scan(s, x, err);
			aw_buf_truncate(path, mark);
			if (e)
				break;
		}
	}
	return e;
}

aw_err aw_redact_refuse_credentials(const json_t *v, const char *where, aw_err code,
				    int ref_strings, aw_error *err)
{
	if (!v)
		return AW_OK;
	scan_ctx s = {code, ref_strings, AW_BUF_INIT(AW_JSON_PTR_MAX)};
	aw_buf_adds(&s.path, where);
	aw_err e = scan(&s, v, err);
	aw_buf_free(&s.path);
	return e;
}
