/*
 * fuzz_jwt.c - approval tokens on arbitrary bytes: the JWS parser and the
 * whole verification under a fixed key ring. A token that verifies must
 * carry a signature the ring's key made, every claim present and the
 * project's audience; the parser never reads past its input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/approval.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static aw_keyring *kr;
	aw_error err;
	if (!kr && aw_keyring_from_env(
			   "k1:0101010101010101010101010101010101010101010101010101010101010101",
			   &kr, &err))
		abort();
	char *tok = malloc(size + 1);
	if (!tok)
		return 0;
	memcpy(tok, data, size);
	tok[size] = 0;
	aw_jws j;
	if (aw_jws_parse(tok, size, &j, &err) == AW_OK) {
		if (!json_is_object(j.header) || !json_is_object(j.claims) || j.signed_len >= size)
			abort();
		aw_jws_clear(&j);
	}
	aw_approval_claims c;
	if (aw_approval_verify(kr, tok, "awooop", "fz", 1700000000, &c, &err) == AW_OK &&
	    (strcmp(c.aud, "fz") || strcmp(c.kid, "k1") || !c.jti[0] || !c.sub[0]))
		abort();
	free(tok);
	return 0;
}
