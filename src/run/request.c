/*
 * request.c - the body of POST /v1/platform/runs: strict decoding, workflow
 * validation against the executor registry and of the steps' flow members
 * (flow.c: names, references, conditions, retry policies), and the canonical
 * hash that Idempotency-Key replays are compared with. Pure: fuzz/fuzz_run.c
 * drives it.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/jcs.h"
#include "awooop/clock.h"
#include "awooop/json.h"
#include "awooop/redact.h"
#include "awooop/run.h"
#include "awooop/executor.h"
#include "awooop/str.h"

void aw_run_request_free(aw_run_request *r)
{
	json_decref(r->workflow);
	json_decref(r->input);
	r->workflow = r->input = NULL;
}

static aw_err int_member(const json_t *o, const char *key, int lo, int hi, int *out, aw_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return AW_OK;
	char where[32];
	snprintf(where, sizeof where, "/%s", key);
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return aw_fail_at(err, AW_E_REQ_INVALID, where, "%s must be an integer %d..%d", key,
				  lo, hi);
	*out = (int)json_integer_value(v);
	return AW_OK;
}

static aw_err check_step(const json_t *wf, size_t i, aw_error *err)
{
	static const char *const allowed[] = {"kind", "args", "name", "when", "retry", NULL};
	const json_t *step = json_array_get(wf, i);
	char where[64];
	snprintf(where, sizeof where, "/workflow/%zu", i);
	if (!json_is_object(step))
		return aw_fail_at(err, AW_E_RUN_WORKFLOW, where, "a step must be an object");
	aw_err e = aw_json_only(step, allowed, err);
	if (e) {
		char both[sizeof where + sizeof err->where]; /* fits both whole */
		snprintf(both, sizeof both, "%s%s", where, err->where);
		aw_str_show(err->where, sizeof err->where, both); /* too long: says so */
		return e;
	}
	json_t *kind = json_object_get(step, "kind");
	const aw_executor *x =
		json_is_string(kind) ? aw_executor_find(json_string_value(kind)) : NULL;
	if (!x) { /* the kinds this process knows, from the executor registry */
		const char *kinds[16];
		size_t nk = aw_executor_kinds(kinds, 16);
		char known[160] = "";
		for (size_t k = 0, o = 0; k < nk && k < 16 && o < sizeof known; k++)
			o += (size_t)snprintf(known + o, sizeof known - o, "%s%s", k ? ", " : "",
					      kinds[k]);
		snprintf(where + strlen(where), sizeof where - strlen(where), "/kind");
		return aw_fail_at(err, AW_E_RUN_WORKFLOW, where, "unknown step kind (known: %s)",
				  known);
	}
	json_t *args = json_object_get(step, "args");
	if (args && !json_is_object(args)) {
		snprintf(where + strlen(where), sizeof where - strlen(where), "/args");
		return aw_fail_at(err, AW_E_RUN_WORKFLOW, where, "args must be an object");
	}
	json_t *empty = NULL;
	if (!args)
		args = empty = json_object();
	if (!args)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	e = x->validate ? x->validate(args, err) : AW_OK;
	/* a complaint about a value a reference supplies waits for that value:
	 * the worker checks the args again once resolved (E-RUN-011 then) */
	if (e && aw_run_ref_near(args, err->where))
		e = AW_OK;
	json_decref(empty);
	if (e) {
		char inner[sizeof err->where];
		AW_COPY_ARRAY(inner, err->where);
		snprintf(err->where, sizeof err->where, "%.40s/args%.80s", where, inner);
		err->err = e = AW_E_RUN_WORKFLOW;
	}
	return e ? e : aw_run_flow_check_step(wf, i, err);
}

aw_err aw_run_request_decode(const char *body, size_t len, aw_run_request *out, aw_error *err)
{
	static const char *const allowed[] = {"workflow", "input",	  "mode",
					      "priority", "max_attempts", "timeout_s",
					      "run_at",	  "queue",	  NULL};
	memset(out, 0, sizeof *out);
	out->max_attempts = 3;
	out->timeout_s = 300;
	snprintf(out->queue, sizeof out->queue, "default");
	json_t *o = NULL;
	const char *mode = NULL;
	aw_err e = aw_json_parse_object(body, len, &o, err);
	if (e)
		return e;
	if ((e = aw_json_only(o, allowed, err)) || (e = aw_json_str(o, "mode", 0, &mode, err)) ||
	    (e = int_member(o, "priority", -1000, 1000, &out->priority, err)) ||
	    (e = int_member(o, "max_attempts", 1, 100, &out->max_attempts, err)) ||
	    (e = int_member(o, "timeout_s", 1, 86400, &out->timeout_s, err)))
		goto out;
	if (mode && strcmp(mode, "live") && strcmp(mode, "shadow")) {
		e = aw_fail_at(err, AW_E_REQ_INVALID, "/mode", "mode must be live or shadow");
		goto out;
	}
	out->shadow = mode && strcmp(mode, "shadow") == 0;
	const char *run_at = NULL;
	int64_t at_ms = 0;
	if ((e = aw_json_str(o, "run_at", 0, &run_at, err)))
		goto out;
	if (run_at && aw_clock_parse(run_at, &at_ms) != 0) {
		e = aw_fail_at(
			err, AW_E_REQ_INVALID, "/run_at",
			"run_at must be a time like 2026-11-29T09:54:27.000Z (UTC, milliseconds)");
		goto out;
	}
	if (run_at)
		aw_clock_format(at_ms, out->run_at); /* canonical: the hash and the store agree */
	const char *queue = NULL;
	if ((e = aw_json_str(o, "queue", 0, &queue, err)))
		goto out;
	if (queue && !aw_run_queue_name_ok(queue)) {
		e = aw_fail_at(err, AW_E_REQ_INVALID, "/queue",
			       "queue must be 1..%d letters, digits, '.', '_' or '-'",
			       AW_QUEUE_MAX);
		goto out;
	}
	if (queue && AW_STR_COPY(out->queue, queue) < 0) { /* checked above: fits */
		e = aw_fail_at(err, AW_E_REQ_INVALID, "/queue", "queue is at most %d bytes",
			       AW_QUEUE_MAX);
		goto out;
	}
	json_t *wf = json_object_get(o, "workflow");
	if (!json_is_array(wf) || json_array_size(wf) == 0 ||
	    json_array_size(wf) > AW_RUN_MAX_STEPS) {
		e = aw_fail_at(err, AW_E_RUN_WORKFLOW, "/workflow",
			       "workflow must be an array of 1..%d steps", AW_RUN_MAX_STEPS);
		goto out;
	}
	for (size_t i = 0; i < json_array_size(wf); i++)
		if ((e = check_step(wf, i, err)))
			goto out;
	if ((e = aw_run_no_secrets(wf, "/workflow", err)) ||
	    (e = aw_run_no_secrets(json_object_get(o, "input"), "/input", err)))
		goto out;
	out->workflow = json_incref(wf);
	json_t *input = json_object_get(o, "input");
	out->input = input && !json_is_null(input) ? json_incref(input) : NULL;
out:
	json_decref(o);
	if (e)
		aw_run_request_free(out);
	return e;
}

/* ---- no credential travels in a run definition: readers of the project see
 * the workflow and its input as submitted, so a credential there is refused;
 * a step names it by reference instead ({"secret_ref": "env:NAME"}) */
aw_err aw_run_no_secrets(const json_t *v, const char *where, aw_error *err)
{
	return aw_redact_refuse_credentials(v, where, AW_E_RUN_SECRET, 0, err);
}

aw_err aw_run_request_hash(const aw_run_request *r, char out[65], aw_error *err)
{
	json_t *canon = json_pack("{s:O, s:s, s:i, s:i, s:i}", "workflow", r->workflow, "mode",
				  r->shadow ? "shadow" : "live", "priority", r->priority,
				  "max_attempts", r->max_attempts, "timeout_s", r->timeout_s);
	if (canon && r->input)
		json_object_set(canon, "input", r->input);
	if (canon && r->run_at[0]) /* absent from older hashes: their replays still match */
		json_object_set_new(canon, "run_at", json_string(r->run_at));
	if (canon && strcmp(r->queue, "default") != 0) /* the same for the queue */
		json_object_set_new(canon, "queue", json_string(r->queue));
	int bad = !canon || aw_jcs_sha256(canon, out) != 0;
	json_decref(canon);
	return bad ? aw_fail(err, AW_E_NOMEM, "out of memory") : AW_OK;
}

int aw_run_queue_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > AW_QUEUE_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
			return 0;
	return 1;
}

int aw_run_idem_key_ok(const char *key)
{
	size_t n = key ? strlen(key) : 0;
	if (n == 0 || n > 255)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (key[i] < 0x21 || key[i] > 0x7e)
			return 0;
	return 1;
}

void aw_run_step_key(const char *run_id, int step_no, char *out, size_t cap)
{
	snprintf(out, cap, "%s-%d", run_id, step_no);
}
