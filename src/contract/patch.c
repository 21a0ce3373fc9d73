/*
 * patch.c - RFC 6902 JSON Patch generation: the operations that turn one
 * document into another. Objects are compared member by member (remove, add,
 * recurse); arrays element by element while both have elements, then
 * trailing adds or removes (from the end, so indexes stay valid); scalars
 * that differ are replaced. The current path lives in one bounded buffer that
 * grows on the way down and is cut back on the way up: no path is ever cut.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/contract.h"
#include "awooop/json.h"

static int op(json_t *patch, const char *kind, const aw_buf *path, const json_t *value)
{
	json_t *o = json_pack("{s:s, s:s}", "op", kind, "path", aw_buf_str(path));
	if (o && value && json_object_set_new(o, "value", json_deep_copy(value)))
		json_decref(o), o = NULL;
	return !o || json_array_append_new(patch, o) ? -1 : 0;
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The member names of o in byte order (deterministic patches); free() it. */
static const char **sorted_keys(const json_t *o, size_t *n)
{
	*n = json_object_size(o);
	const char **keys = aw_malloc((*n ? *n : 1) * sizeof *keys);
	size_t i = 0;
	const char *k;
	json_t *v;
	if (!keys)
		return NULL;
	json_object_foreach ((json_t *)o, k, v)
		keys[i++] = k;
	qsort(keys, *n, sizeof *keys, cmp_str);
	return keys;
}

/* Appends the operations turning a into b at *path; -1 on failure (out of
 * memory, or path->err set when a path would pass its ceiling). */
static int diff(json_t *patch, const json_t *a, const json_t *b, aw_buf *path)
{
	size_t mark = path->len;
	int rc = 0;
	if (json_is_object(a) && json_is_object(b)) {
		size_t na, nb;
		const char **ka = sorted_keys(a, &na), **kb = sorted_keys(b, &nb);
		rc = ka && kb ? 0 : -1;
		for (size_t i = 0; !rc && i < na; i++) {
			json_t *w = json_object_get(b, ka[i]);
			rc = aw_json_ptr_push(path, ka[i]) ? -1
			     : !w			   ? op(patch, "remove", path, NULL)
				  : diff(patch, json_object_get(a, ka[i]), w, path);
			aw_buf_truncate(path, mark);
		}
		for (size_t i = 0; !rc && i < nb; i++) {
			if (json_object_get(a, kb[i]))
				continue;
			rc = aw_json_ptr_push(path, kb[i])
				     ? -1
				     : op(patch, "add", path, json_object_get(b, kb[i]));
			aw_buf_truncate(path, mark);
		}
		free(ka);
		free(kb);
		return rc;
	}
	if (json_is_array(a) && json_is_array(b)) {
		size_t na = json_array_size(a), nb = json_array_size(b);
		for (size_t i = 0; !rc && i < na && i < nb; i++) {
			rc = aw_json_ptr_push_index(path, i) ? -1
							     : diff(patch, json_array_get(a, i),
								    json_array_get(b, i), path);
			aw_buf_truncate(path, mark);
		}
		for (size_t i = na; !rc && i < nb; i++) {
			rc = aw_buf_adds(path, "/-") ? -1
						     : op(patch, "add", path, json_array_get(b, i));
			aw_buf_truncate(path, mark);
		}
		for (size_t i = na; !rc && i > nb; i--) {
			rc = aw_json_ptr_push_index(path, i - 1) ? -1
								 : op(patch, "remove", path, NULL);
			aw_buf_truncate(path, mark);
		}
		return rc;
	}
	if (!json_equal((json_t *)a, (json_t *)b))
		return op(patch, "replace", path, b);
	return 0;
}

aw_err aw_json_patch_diff(const json_t *from, const json_t *to, json_t **out, aw_error *err)
{
	aw_buf path = AW_BUF_INIT(AW_JSON_PTR_MAX);
	json_t *patch = json_array();
	int rc = patch ? diff(patch, from, to, &path) : -1;
	aw_err e = aw_buf_err(&path);
	aw_buf_free(&path);
	if (rc) {
		json_decref(patch);
		if (e == AW_E_LIMIT)
			return aw_fail(err, e, "a JSON pointer in the diff would exceed %zu bytes",
				       (size_t)AW_JSON_PTR_MAX);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	*out = patch;
	return AW_OK;
}
