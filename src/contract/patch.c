/*
 * patch.c - RFC 6902 JSON Patch generation: the operations that turn one
 * document into another. Objects are compared member by member (remove, add,
 * recurse); arrays element by element while both have elements, then
 * trailing adds or removes (from the end, so indexes stay valid); scalars
 * that differ are replaced.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/contract.h"

static void path_join(char *out, size_t cap, const char *base, const char *tok)
{
	size_t o = (size_t)snprintf(out, cap, "%s/", base);
	for (const char *t = tok; *t && o + 3 < cap; t++) {
		if (*t == '~' || *t == '/') {
			out[o++] = '~';
			out[o++] = *t == '~' ? '0' : '1';
		} else {
			out[o++] = *t;
		}
	}
	out[o] = '\0';
}

static void op(json_t *patch, const char *kind, const char *path, const json_t *value)
{
	json_t *o = json_pack("{s:s, s:s}", "op", kind, "path", path);
	if (value)
		json_object_set_new(o, "value", json_deep_copy(value));
	json_array_append_new(patch, o);
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The member names of o in byte order (deterministic patches); free() it. */
static const char **sorted_keys(const json_t *o, size_t *n)
{
	*n = json_object_size(o);
	const char **keys = malloc((*n ? *n : 1) * sizeof *keys);
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

static void diff(json_t *patch, const json_t *a, const json_t *b, const char *path)
{
	if (json_is_object(a) && json_is_object(b)) {
		char p[1024];
		size_t na, nb;
		const char **ka = sorted_keys(a, &na), **kb = sorted_keys(b, &nb);
		for (size_t i = 0; ka && i < na; i++) {
			path_join(p, sizeof p, path, ka[i]);
			json_t *w = json_object_get(b, ka[i]);
			if (!w)
				op(patch, "remove", p, NULL);
			else
				diff(patch, json_object_get(a, ka[i]), w, p);
		}
		for (size_t i = 0; kb && i < nb; i++) {
			if (!json_object_get(a, kb[i])) {
				path_join(p, sizeof p, path, kb[i]);
				op(patch, "add", p, json_object_get(b, kb[i]));
			}
		}
		free(ka);
		free(kb);
		return;
	}
	if (json_is_array(a) && json_is_array(b)) {
		size_t na = json_array_size(a), nb = json_array_size(b);
		char p[1024];
		for (size_t i = 0; i < na && i < nb; i++) {
			snprintf(p, sizeof p, "%s/%zu", path, i);
			diff(patch, json_array_get(a, i), json_array_get(b, i), p);
		}
		for (size_t i = na; i < nb; i++) {
			snprintf(p, sizeof p, "%s/-", path);
			op(patch, "add", p, json_array_get(b, i));
		}
		for (size_t i = na; i > nb; i--) {
			snprintf(p, sizeof p, "%s/%zu", path, i - 1);
			op(patch, "remove", p, NULL);
		}
		return;
	}
	if (!json_equal((json_t *)a, (json_t *)b))
		op(patch, "replace", path, b);
}

json_t *aw_json_patch_diff(const json_t *from, const json_t *to)
{
	json_t *patch = json_array();
	if (patch)
		diff(patch, from, to, "");
	return patch;
}
