/*
 * test_openapi.c - the route table and docs/api/openapi.json list the same
 * operations: every route has an operation (with an operationId and its 4XX
 * problem response) and every operation a
 * route. Path templates compare with their parameter names erased ("{x}").
 * Every free-form object says so (additionalProperties: true).
 *   test_openapi DOCS/API/OPENAPI.JSON
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "support.h"

#include "awooop/http.h"

static const char *doc_path;
static json_t *doc;

/* "/a/{b}/c" -> "/a/{}/c" */
static void erase_names(const char *in, char *out, size_t cap)
{
	size_t o = 0;
	for (const char *p = in; *p && o + 1 < cap; p++) {
		out[o++] = *p;
		if (*p == '{')
			while (p[1] && p[1] != '}')
				p++;
	}
	out[o] = 0;
}

static json_t *find_op(const char *method, const char *tmpl)
{
	char want[512], have[512], m[16];
	erase_names(tmpl, want, sizeof want);
	snprintf(m, sizeof m, "%s", method);
	for (char *c = m; *c; c++)
		*c = (char)(*c - 'A' + 'a');
	const char *path;
	json_t *item;
	json_object_foreach (json_object_get(doc, "paths"), path, item) {
		erase_names(path, have, sizeof have);
		if (!strcmp(want, have) && json_object_get(item, m))
			return json_object_get(item, m);
	}
	return NULL;
}

static void test_every_route_documented(void **state)
{
	(void)state;
	const char *method, *tmpl;
	int n = 0, missing = 0;
	for (size_t i = 0; aw_route_at(i, &method, &tmpl); i++, n++) {
		json_t *op = find_op(method, tmpl);
		if (!op) {
			fprintf(stderr, "route %s %s has no operation\n", method, tmpl);
			missing++;
			continue;
		}
		if (!json_is_string(json_object_get(op, "operationId")) ||
		    !json_object_get(json_object_get(op, "responses"), "4XX")) {
			fprintf(stderr, "%s %s: operationId or 4XX (problem) response missing\n",
				method, tmpl);
			missing++;
		}
	}
	assert_true(n > 30);
	assert_int_equal(missing, 0);
}

static void test_every_operation_routed(void **state)
{
	(void)state;
	const char *path, *m;
	json_t *item, *op;
	int ops = 0, stray = 0;
	json_object_foreach (json_object_get(doc, "paths"), path, item) {
		json_object_foreach (item, m, op) {
			char up[16];
			snprintf(up, sizeof up, "%s", m);
			for (char *c = up; *c; c++)
				*c = (char)(*c - 'a' + 'A');
			const char *rm, *rt;
			int found = 0;
			char want[512], have[512];
			erase_names(path, want, sizeof want);
			for (size_t i = 0; !found && aw_route_at(i, &rm, &rt); i++) {
				erase_names(rt, have, sizeof have);
				found = !strcmp(rm, up) && !strcmp(want, have);
			}
			ops++;
			if (!found) {
				fprintf(stderr, "operation %s %s has no route\n", up, path);
				stray++;
			}
		}
	}
	assert_true(ops > 30);
	assert_int_equal(stray, 0);
}

/* 1 when schema s may be an object: "type" is "object" or a list with it. */
static int may_be_object(json_t *s)
{
	json_t *t = json_object_get(s, "type");
	if (json_is_string(t))
		return !strcmp(json_string_value(t), "object");
	size_t i;
	json_t *v;
	json_array_foreach (t, i, v)
		if (json_is_string(v) && !strcmp(json_string_value(v), "object"))
			return 1;
	return 0;
}

/* Counts the schemas under v that may be objects but fix no members
 * ("properties") and do not say that any member goes (additionalProperties
 * true or a schema): a generated client types those as an empty object. */
static int unmarked_free_form(json_t *v, const char *where, int *free_form)
{
	int bad = 0;
	if (json_is_object(v)) {
		if (may_be_object(v) && !json_object_get(v, "properties")) {
			json_t *ap = json_object_get(v, "additionalProperties");
			if (json_is_true(ap) || json_is_object(ap)) {
				(*free_form)++;
			} else {
				fprintf(stderr,
					"%s: a free-form object without additionalProperties\n",
					where);
				bad++;
			}
		}
		const char *k;
		json_t *c;
		json_object_foreach (v, k, c) {
			char w[512];
			snprintf(w, sizeof w, "%s/%s", where, k);
			bad += unmarked_free_form(c, w, free_form);
		}
	} else if (json_is_array(v)) {
		size_t i;
		json_t *c;
		json_array_foreach (v, i, c) {
			char w[512];
			snprintf(w, sizeof w, "%s/%zu", where, i);
			bad += unmarked_free_form(c, w, free_form);
		}
	}
	return bad;
}

/* Free-form objects (a step's args, a contract's body, a run's input, usage,
 * a ledger) are marked additionalProperties: true, so generated clients can
 * hold them. */
static void test_free_form_marked(void **state)
{
	(void)state;
	int free_form = 0;
	assert_int_equal(unmarked_free_form(doc, "#", &free_form), 0);
	assert_true(free_form >= 10);
	/* the ones issue 45 names */
	json_t *run = json_object_get(
		json_object_get(json_object_get(doc, "components"), "schemas"), "Run");
	json_t *input = json_object_get(json_object_get(run, "properties"), "input");
	assert_true(json_is_true(json_object_get(input, "additionalProperties")));
	json_t *rev = json_object_get(
		json_object_get(json_object_get(json_object_get(doc, "components"), "schemas"),
				"Revision"),
		"properties");
	assert_true(json_is_true(
		json_object_get(json_object_get(rev, "body"), "additionalProperties")));
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: test_openapi OPENAPI.JSON [CASES]\n");
		return 2;
	}
	doc_path = argv[1];
	json_error_t je;
	doc = json_load_file(doc_path, JSON_REJECT_DUPLICATES, &je);
	if (!doc) {
		fprintf(stderr, "%s: %s\n", doc_path, je.text);
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_route_documented),
		cmocka_unit_test(test_every_operation_routed),
		cmocka_unit_test(test_free_form_marked),
	};
	int rc = aw_test_run_cases("openapi", argc > 2 ? argv[2] : NULL, tests,
				   sizeof tests / sizeof tests[0], NULL, NULL);
	json_decref(doc);
	return rc;
}
