/*
 * fuzz_body.c - the request-body path on arbitrary bytes: strict JSON object
 * parse, unknown-field refusal, field types and identifier grammars, through the
 * decoders the HTTP handlers use. Checks that an accepted body really satisfies
 * the grammar it was checked against, and that aw_json_loadb (the fast
 * reader) gives what json_loadb gives: the same values, members in the same
 * order, or the same refusal; and that aw_json_dumps writes what json_dumps
 * writes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/ident.h"
#include "awooop/json.h"
#include "http/http_internal.h"

static void same_as_jansson(const char *d, size_t n, size_t flags)
{
	json_error_t a, b;
	json_t *x = aw_json_loadb(d, n, flags, &a), *y = json_loadb(d, n, flags, &b);
	if (!x != !y)
		abort();
	char *sx = x ? json_dumps(x, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	char *sy = y ? json_dumps(y, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	if ((sx || sy) && (!sx || !sy || strcmp(sx, sy) || !json_equal(x, y)))
		abort();
	if (!x && strcmp(a.text, b.text))
		abort();
	char *fx = x ? aw_json_dumps(x, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	if (x && (!fx || strcmp(fx, sx)))
		abort();
	free(fx);
	free(sx);
	free(sy);
	json_decref(x);
	json_decref(y);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	same_as_jansson((const char *)data, size, JSON_REJECT_DUPLICATES);
	same_as_jansson((const char *)data, size, 0);
	same_as_jansson((const char *)data, size, JSON_DECODE_ANY);
	aw_error err;
	aw_project_create_req p;
	if (decode_project_create((const char *)data, size, &p, &err) == AW_OK &&
	    !aw_ident_project_ok(p.id))
		abort();
	aw_key_create_req k;
	if (decode_key_create((const char *)data, size, &k, &err) == AW_OK &&
	    (!aw_ident_name_ok(k.name) || k.scope == AW_SCOPE_NONE))
		abort();
	json_t *body = NULL;
	if (decode_contract_body((const char *)data, size, &body, &err) == AW_OK) {
		if (!json_is_object(body))
			abort();
		json_decref(body);
	}
	return 0;
}
