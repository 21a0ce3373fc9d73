/*
 * fuzz_key_limits.c - a virtual key's limits as a key admin could write
 * them (POST /keys, PATCH /keys/{id}, the CLI): the body decoders and the
 * limits parser. Checks: no crash; an accepted document round-trips (its
 * stored form parses back to the same limits, and fits the store's 4 KiB
 * column); every limit an accepted document holds is in its range; a
 * refusal of the parser is always E-KEY-005.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/tenancy.h"
#include "http/http_internal.h"

static void check_range(const aw_key_limits *l)
{
	if (l->nmodels < 0 || l->nmodels > AW_KEY_MODELS_MAX || l->rpm < 0 ||
	    l->rpm > AW_KEY_LIMIT_MAX || l->tpm < 0 || l->tpm > AW_KEY_LIMIT_MAX ||
	    l->budget_tokens > AW_KEY_LIMIT_MAX || l->budget_cost > 1000000000000LL)
		abort();
	if ((l->budget_tokens >= 0 || l->budget_cost >= 0) && strcmp(l->budget_period, "day") &&
	    strcmp(l->budget_period, "month") && strcmp(l->budget_period, "total"))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	aw_error err = {0};
	json_t *doc = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	aw_key_limits l;
	if (doc && aw_key_limits_parse(doc, NULL, &l, &err) == AW_OK) {
		check_range(&l);
		json_t *stored = aw_key_limits_json(&l);
		char *txt = json_dumps(stored, JSON_COMPACT | JSON_SORT_KEYS);
		if (!txt || strlen(txt) >= 4096)
			abort();
		aw_key_limits back;
		aw_key_limits_load(txt, l.expires_at, &back);
		if (memcmp(&back, &l, sizeof l) != 0) /* both start from aw_key_limits_none */
			abort();
		free(txt);
		json_decref(stored);
	} else if (doc && err.err != AW_E_KEY_LIMITS) {
		abort();
	}
	json_decref(doc);

	aw_key_create_req k;
	memset(&err, 0, sizeof err);
	if (decode_key_create((const char *)data, size, &k, &err) == AW_OK)
		check_range(&k.limits);
	json_t *patch = NULL;
	if (decode_key_update((const char *)data, size, &patch, &err) == AW_OK &&
	    !json_is_object(patch))
		abort();
	json_decref(patch);
	return 0;
}
