/*
 * test_openapi.c - the route table and docs/api/openapi.json list the same
 * operations: every route has an operation (with an operationId and its 4XX
 * problem response) and every operation a
 * route. Path templates compare with their parameter names erased ("{x}").
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
	};
	int rc = aw_test_run_cases("openapi", argc > 2 ? argv[2] : NULL, tests,
				   sizeof tests / sizeof tests[0], NULL, NULL);
	json_decref(doc);
	return rc;
}
