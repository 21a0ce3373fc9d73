/*
 * fuzz_numbers.c - the number policy on arbitrary bytes: every JSON object the
 * strict parser accepts must come back equal after the canonical form that the
 * SQLite store writes (RFC 8785) is parsed again, numbers compared by value -
 * and so must the plain decimal form PostgreSQL's jsonb prints for the same
 * numbers (all digits, no exponent).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/jcs.h"
#include "awooop/json.h"

static int same(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b) &&
		       (json_is_real(a) || json_is_real(b) ||
			json_integer_value(a) == json_integer_value(b));
	if (json_typeof(a) != json_typeof(b))
		return 0;
	if (json_is_array(a)) {
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!same(json_array_get(a, i), json_array_get(b, i)))
				return 0;
		return 1;
	}
	if (json_is_object(a)) {
		const char *k;
		json_t *v;
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach ((json_t *)a, k, v)
			if (!json_object_get(b, k) || !same(v, json_object_get(b, k)))
				return 0;
		return 1;
	}
	return json_equal((json_t *)a, (json_t *)b);
}

/* Every number of v as jsonb would print it: all digits, no exponent. */
static void check_plain(const json_t *v)
{
	if (json_is_real(v)) {
		char txt[512];
		double x = json_real_value(v);
		snprintf(txt, sizeof txt, "[%.330f]", x); /* exact for |x| <= 2^53 */
		json_t *back = json_loads(txt, 0, NULL);
		if (!back || json_number_value(json_array_get(back, 0)) != x)
			abort(); /* accepted, but would not read back from PostgreSQL */
		json_decref(back);
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++)
			check_plain(json_array_get(v, i));
	} else if (json_is_object(v)) {
		const char *k;
		json_t *x;
		json_object_foreach ((json_t *)v, k, x)
			check_plain(x);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = NULL;
	aw_error err;
	if (aw_json_parse_object((const char *)data, size, &doc, &err) != AW_OK)
		return 0;
	char *canon = aw_jcs(doc);
	json_t *back = canon ? json_loads(canon, 0, NULL) : NULL;
	if (canon && (!back || !same(doc, back)))
		abort(); /* accepted, but would not read back from SQLite */
	check_plain(doc);
	json_decref(back);
	free(canon);
	json_decref(doc);
	return 0;
}
