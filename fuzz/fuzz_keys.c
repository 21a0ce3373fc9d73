/*
 * fuzz_keys.c - the Redis key classifier (it reads names found in a live
 * keyspace) and the builder on arbitrary bytes. Checks: a key classified as the
 * new form of a tenant pattern carries a valid project, and building a key from
 * fuzzed components either fails or yields a name that classifies back to the
 * same pattern (no component can move a key to another pattern or tenant).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/ident.h"
#include "awooop/keys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char key[512];
	size_t n = size < sizeof key - 1 ? size : sizeof key - 1;
	memcpy(key, data, n);
	key[n] = '\0';
	int modern;
	char project[64];
	const aw_key_pattern *p = aw_keys_classify(key, &modern, project, sizeof project);
	if (p && modern && p->scope == AW_KEY_TENANT && !aw_ident_project_ok(project))
		abort();
	if (size < 2)
		return 0;
	/* first byte picks a pattern, the rest (split at NULs) are components */
	const aw_key_pattern *q = aw_keys_at(data[0] % aw_keys_count());
	const char *vals[4];
	int nv = 0;
	char *rest = key + 1;
	while (nv < 4 && rest < key + n) {
		vals[nv++] = rest;
		rest += strlen(rest) + 1;
	}
	char built[512];
	aw_error err;
	if (aw_keys_build(q, 1, "awoooi", vals, nv, built, sizeof built, &err) == AW_OK) {
		const aw_key_pattern *back =
			aw_keys_classify(built, &modern, project, sizeof project);
		if (!back || !modern)
			abort();
		if (q->scope == AW_KEY_TENANT && strcmp(project, "awoooi") != 0)
			abort();
	}
	return 0;
}
