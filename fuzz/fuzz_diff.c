/*
 * fuzz_diff.c - the RFC 6902 diff generator on arbitrary pairs of documents:
 * the bytes before the first NUL are document A, the rest document B. Checks
 * the property that matters: applying the generated patch to A gives B. The
 * applier below is a small independent one (RFC 6901 pointers, add / remove /
 * replace), so a wrong, cut or mis-escaped path fails the check.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/contract.h"

/* Next unescaped reference token of *p (after its leading '/'); malloc'd. */
static char *next_token(const char **p)
{
	const char *s = *p + 1;
	size_t n = strcspn(s, "/");
	char *t = malloc(n + 1), *o = t;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '~' && i + 1 < n && (s[i + 1] == '0' || s[i + 1] == '1'))
			*o++ = s[++i] == '0' ? '~' : '/';
		else
			*o++ = s[i];
	}
	*o = '\0';
	*p = s + n;
	return t;
}

/* Applies one operation to *doc (which it may replace); 0 on success. */
static int apply_op(json_t **doc, const json_t *op)
{
	const char *kind = json_string_value(json_object_get(op, "op"));
	const char *path = json_string_value(json_object_get(op, "path"));
	json_t *value = json_object_get(op, "value");
	if (!kind || !path)
		return -1;
	if (!*path) { /* the whole document */
		if (strcmp(kind, "replace") != 0 || !value)
			return -1;
		json_decref(*doc);
		*doc = json_deep_copy(value);
		return 0;
	}
	json_t *parent = *doc;
	const char *p = path;
	char *tok = next_token(&p);
	while (*p) { /* descend to the parent of the last token */
		json_t *next = json_is_object(parent) ? json_object_get(parent, tok)
			       : json_is_array(parent)
				       ? json_array_get(parent, strtoul(tok, NULL, 10))
				       : NULL;
		free(tok);
		if (!next)
			return -1;
		parent = next;
		tok = next_token(&p);
	}
	int rc = -1;
	if (json_is_object(parent)) {
		int has = json_object_get(parent, tok) != NULL;
		if (!strcmp(kind, "remove") && has)
			rc = json_object_del(parent, tok);
		else if (!strcmp(kind, "add") && !has && value)
			rc = json_object_set_new(parent, tok, json_deep_copy(value));
		else if (!strcmp(kind, "replace") && has && value)
			rc = json_object_set_new(parent, tok, json_deep_copy(value));
	} else if (json_is_array(parent)) {
		size_t n = json_array_size(parent), i = strtoul(tok, NULL, 10);
		if (!strcmp(kind, "add") && value && !strcmp(tok, "-"))
			rc = json_array_append_new(parent, json_deep_copy(value));
		else if (!strcmp(kind, "remove") && i < n)
			rc = json_array_remove(parent, i);
		else if (!strcmp(kind, "replace") && i < n && value)
			rc = json_array_set_new(parent, i, json_deep_copy(value));
	}
	free(tok);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	if (!nul)
		return 0;
	size_t na = (size_t)(nul - data);
	json_t *a = json_loadb((const char *)data, na, JSON_DECODE_ANY, NULL);
	json_t *b = json_loadb((const char *)nul + 1, size - na - 1, JSON_DECODE_ANY, NULL);
	json_t *patch = NULL;
	aw_error err;
	if (a && b && aw_json_patch_diff(a, b, &patch, &err) == AW_OK) {
		json_t *doc = json_deep_copy(a);
		size_t i;
		json_t *op;
		json_array_foreach (patch, i, op)
			if (apply_op(&doc, op))
				abort(); /* a path the patch names does not exist */
		if (!json_equal(doc, b))
			abort(); /* the patch does not turn a into b */
		json_decref(doc);
		json_decref(patch);
	}
	json_decref(a);
	json_decref(b);
	return 0;
}
