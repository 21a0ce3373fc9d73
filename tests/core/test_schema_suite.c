/*
 * test_schema_suite.c - runs the official JSON Schema Test Suite (Debian
 * package json-schema-test-suite, tests/draft7/ files) through aw_schema.
 * Every case whose schema uses only supported keywords must give the expected
 * answer; the others are counted as skipped (with the reason). Prints
 * "N passed, N failed, N skipped" and fails on any failure.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/schema.h"

#define SUITE "/usr/share/json-schema-test-suite/tests/draft7"

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : SUITE;
	int verbose = getenv("VERBOSE") != NULL;
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "cannot open %s (install json-schema-test-suite)\n", dir);
		return 1;
	}
	char *names[256];
	int nn = 0;
	struct dirent *e;
	while ((e = readdir(d)) && nn < 256) {
		size_t l = strlen(e->d_name);
		if (l > 5 && strcmp(e->d_name + l - 5, ".json") == 0)
			names[nn++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, (size_t)nn, sizeof names[0], cmp);
	long passed = 0, failed = 0, skipped = 0;
	for (int f = 0; f < nn; f++) {
		char path[512];
		snprintf(path, sizeof path, "%s/%s", dir, names[f]);
		json_error_t je;
		json_t *groups = json_load_file(path, 0, &je);
		if (!groups) {
			fprintf(stderr, "%s: %s\n", path, je.text);
			return 1;
		}
		long fp = 0, ff = 0, fs = 0;
		size_t gi;
		json_t *g;
		json_array_foreach (groups, gi, g) {
			json_t *schema = json_object_get(g, "schema");
			json_t *tests = json_object_get(g, "tests");
			char why[256] = "";
			aw_schema *s = NULL;
			aw_error err;
			if (!aw_schema_supported(schema, why, sizeof why) ||
			    aw_schema_compile(schema, &s, &err) != AW_OK) {
				fs += (long)json_array_size(tests);
				if (verbose)
					printf("  skip %s / %s: %s\n", names[f],
					       json_string_value(json_object_get(g, "description")),
					       why);
				continue;
			}
			size_t ti;
			json_t *t;
			json_array_foreach (tests, ti, t) {
				int want = json_is_true(json_object_get(t, "valid"));
				aw_schema_error errs[4];
				int got = aw_schema_validate(s, json_object_get(t, "data"), errs,
							     4) == 0;
				if (got == want) {
					fp++;
				} else {
					ff++;
					printf("FAIL %s / %s / %s: expected %s\n", names[f],
					       json_string_value(json_object_get(g, "description")),
					       json_string_value(json_object_get(t, "description")),
					       want ? "valid" : "invalid");
				}
			}
			aw_schema_free(s);
		}
		printf("%-28s %4ld passed %3ld failed %4ld skipped\n", names[f], fp, ff, fs);
		passed += fp;
		failed += ff;
		skipped += fs;
		json_decref(groups);
		free(names[f]);
	}
	printf("JSON Schema Test Suite draft7:\n%ld passed, %ld failed, %ld skipped\n", passed,
	       failed, skipped);
	return failed == 0 && passed > 300 ? 0 : 1;
}
