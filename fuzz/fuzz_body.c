/*
 * fuzz_body.c - the request-body path on arbitrary bytes: strict JSON object
 * parse, unknown-field refusal, field types and identifier grammars, through the
 * decoders the HTTP handlers use. Checks that an accepted body really satisfies
 * the grammar it was checked against.
 */
#include <stdint.h>
#include <stdlib.h>

#include "awooop/ident.h"
#include "http/http_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	aw_error err;
	aw_project_create_req p;
	if (aw_decode_project_create((const char *)data, size, &p, &err) == AW_OK &&
	    !aw_ident_project_ok(p.id))
		abort();
	aw_key_create_req k;
	if (aw_decode_key_create((const char *)data, size, &k, &err) == AW_OK &&
	    (!aw_ident_name_ok(k.name) || k.scope == AW_SCOPE_NONE))
		abort();
	json_t *body = NULL;
	if (aw_decode_contract_body((const char *)data, size, &body, &err) == AW_OK) {
		if (!json_is_object(body))
			abort();
		json_decref(body);
	}
	return 0;
}
