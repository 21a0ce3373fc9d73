/*
 * envelope.c - the audit payload members an LLM call and a tool call share
 * (envelope.h).
 */
#include "awooop/envelope.h"

static void set_str(json_t *o, const char *k, const char *v)
{
	if (v && v[0])
		json_object_set_new(o, k, json_string(v));
}

json_t *aw_envelope_json(const aw_envelope *e)
{
	json_t *p = json_object();
	if (!p)
		return NULL;
	set_str(p, "principal", e->ctx->principal);
	set_str(p, "trace_id", e->ctx->trace.trace_id);
	set_str(p, "policy_revision", e->revision_id);
	set_str(p, "policy_body_hash", e->body_hash);
	json_object_set_new(p, "upstream",
			    json_string(e->upstream && e->upstream[0] ? e->upstream : "-"));
	set_str(p, "outcome", e->outcome);
	set_str(p, "code", e->code);
	if (e->gate)
		json_object_set_new(p, "gate", json_integer(e->gate));
	if (e->run_id && e->run_id[0]) {
		set_str(p, "run_id", e->run_id);
		json_object_set_new(p, "step", json_integer(e->step));
	}
	json_object_set_new(p, "latency_ms", json_real(e->latency_ms));
	if (e->metered) {
		json_object_set_new(p, "tokens_in", json_integer((json_int_t)e->tokens_in));
		json_object_set_new(p, "tokens_out", json_integer((json_int_t)e->tokens_out));
	}
	return p;
}
