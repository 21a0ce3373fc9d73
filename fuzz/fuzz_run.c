/*
 * fuzz_run.c - the run submission body (POST /v1/platform/runs) on arbitrary
 * bytes: strict decoding, workflow checks against the executor registry, the
 * canonical request hash, and the Idempotency-Key grammar. An accepted request
 * must satisfy what it was checked against.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	aw_error err;
	aw_run_request req;
	if (aw_run_request_decode((const char *)data, size, &req, &err) == AW_OK) {
		size_t n = json_array_size(req.workflow);
		if (n < 1 || n > AW_RUN_MAX_STEPS || req.max_attempts < 1 ||
		    req.max_attempts > 100 || req.timeout_s < 1 || req.timeout_s > 86400 ||
		    req.priority < -1000 || req.priority > 1000 || !aw_run_queue_name_ok(req.queue))
			abort();
		for (size_t i = 0; i < n; i++) {
			const char *kind = json_string_value(
				json_object_get(json_array_get(req.workflow, i), "kind"));
			if (!kind || !aw_executor_find(kind))
				abort();
		}
		char h1[65], h2[65];
		if (aw_run_request_hash(&req, h1, &err) == AW_OK &&
		    (aw_run_request_hash(&req, h2, &err) != AW_OK || strcmp(h1, h2) != 0))
			abort(); /* the idempotency hash is deterministic */
		aw_run_request_free(&req);
	}
	/* the same bytes as an Idempotency-Key header value */
	char key[300];
	size_t k = size < sizeof key - 1 ? size : sizeof key - 1;
	memcpy(key, data, k);
	key[k] = '\0';
	if (aw_run_idem_key_ok(key) && (strlen(key) == 0 || strlen(key) > 255))
		abort();
	return 0;
}
