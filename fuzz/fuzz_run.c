/*
 * fuzz_run.c - the run submission body (POST /v1/platform/runs) on arbitrary
 * bytes: strict decoding, workflow checks against the executor registry, the
 * steps' flow members (names, references, conditions, retry policies), the
 * canonical request hash, and the Idempotency-Key grammar. An accepted request
 * must satisfy what it was checked against: every reference names the input
 * or an earlier step, and resolving each step's args against a flow document
 * of the input and stand-in results of the steps before it neither crashes
 * nor changes args without references; conditions evaluate. The same bytes
 * as a step failure's message must give a cause that is their prefix.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/run.h"
#include "awooop/executor.h"

/* 1 when every reference inside v names /input or /steps/<an earlier step>. */
static int refs_ok(const json_t *wf, size_t i, const json_t *v)
{
	const char *k;
	json_t *x;
	size_t n;
	if (json_is_object(v)) {
		const char *r = json_string_value(json_object_get(v, "$ref"));
		if (r && r[0] != '#') {
			if (json_object_size(v) != 1)
				return 0;
			if (!strcmp(r, "/input") || !strncmp(r, "/input/", 7))
				return 1;
			if (strncmp(r, "/steps/", 7) != 0)
				return 0;
			const char *name = r + 7, *end = strchr(name, '/');
			size_t len = end ? (size_t)(end - name) : strlen(name);
			for (size_t s = 0; s < i; s++) {
				const char *sn = json_string_value(
					json_object_get(json_array_get(wf, s), "name"));
				if (sn && strlen(sn) == len && !strncmp(sn, name, len))
					return 1;
			}
			return 0;
		}
		json_object_foreach ((json_t *)v, k, x)
			if (!refs_ok(wf, i, x))
				return 0;
	} else if (json_is_array(v)) {
		json_array_foreach (v, n, x)
			if (!refs_ok(wf, i, x))
				return 0;
	}
	return 1;
}

static void check_flow(const aw_run_request *req)
{
	json_t *doc = aw_run_flow_doc(req->input);
	if (!doc)
		return;
	for (size_t i = 0; i < json_array_size(req->workflow); i++) {
		json_t *step = json_array_get(req->workflow, i);
		json_t *args = json_object_get(step, "args"), *when = json_object_get(step, "when");
		json_t *retry = json_object_get(step, "retry");
		json_t *wref = json_pack("{s:O?}", "$ref", json_object_get(when, "$ref"));
		int ok = refs_ok(req->workflow, i, args) && refs_ok(req->workflow, i, wref);
		json_decref(wref);
		if (!ok)
			abort();
		json_t *att = json_object_get(retry, "attempts");
		if (att && (json_integer_value(att) < 1 || json_integer_value(att) > 100))
			abort();
		if (when)
			(void)aw_run_when_holds(when, doc);
		json_t *out = NULL;
		aw_error err;
		if (args && aw_run_resolve(args, doc, &out, &err) == AW_OK) {
			if (!aw_run_has_refs(args) && !json_equal(out, args))
				abort(); /* nothing to substitute: the args as written */
			(void)aw_run_ref_near(args, "/url");
		}
		const char *name = json_string_value(json_object_get(step, "name"));
		if (name && aw_run_flow_add(doc, name, "succeeded", out ? out : args) != 0)
			abort();
		json_decref(out);
	}
	json_decref(doc);
}

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
		check_flow(&req);
		char h1[65], h2[65];
		if (aw_run_request_hash(&req, h1, &err) == AW_OK &&
		    (aw_run_request_hash(&req, h2, &err) != AW_OK || strcmp(h1, h2) != 0))
			abort(); /* the idempotency hash is deterministic */
		aw_run_request_free(&req);
	}
	/* the same bytes as an Idempotency-Key header value, and as a step
	 * failure's message */
	char key[300];
	size_t k = size < sizeof key - 1 ? size : sizeof key - 1;
	memcpy(key, data, k);
	key[k] = '\0';
	if (aw_run_idem_key_ok(key) && (strlen(key) == 0 || strlen(key) > 255))
		abort();
	aw_err cause = aw_run_failure_cause(AW_E_RUN_STEP, key);
	if (cause != AW_E_RUN_STEP &&
	    (strncmp(key, aw_err_code(cause), strlen(aw_err_code(cause))) ||
	     key[strlen(aw_err_code(cause))] != ':'))
		abort();
	(void)aw_run_failure_permanent(AW_E_RUN_STEP, cause, NULL);
	return 0;
}
