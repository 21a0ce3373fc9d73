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
	if (canon && (!back || !aw_json_same(doc, back)))
		abort(); /* accepted, but would not read back from SQLite */
	check_plain(doc);
	json_decref(back);
	free(canon);
	json_decref(doc);
	return 0;
}
