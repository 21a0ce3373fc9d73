/*
 * envelope.h - the envelope of an agent call: what its one audit record says,
 * one struct for both front doors (DESIGN §4) - an LLM call through the LLM
 * gateway (llm.call) and a tool call through the MCP gateway (mcp.call). Each
 * door fills what it knows; aw_envelope_json gives the members they share,
 * under the same names, and the door adds its own details to that payload.
 */
#ifndef AWOOOP_ENVELOPE_H
#define AWOOOP_ENVELOPE_H

#include <jansson.h>

#include "awooop/ctx.h"

typedef struct {
	const aw_ctx *ctx;	 /* principal and trace of the caller */
	const char *revision_id; /* the governing contract's active revision (NULL:
				    none applied: the call ended before it) */
	const char *body_hash;	 /* and its body's hash */
	const char *upstream;	 /* the upstream that answered (NULL: none) */
	const char *outcome;	 /* ok, refused, failed, cancelled, ... */
	const char *code;	 /* the stable code the call ended with, or NULL */
	int gate;		 /* the MCP gate that ended it (0: none) */
	const char *run_id;	 /* the run a step of which made the call (NULL, "": none) */
	int step;
	double latency_ms;
	int metered; /* tokens_in / tokens_out are counted (LLM calls) */
	long long tokens_in, tokens_out;
} aw_envelope;

/* The shared members: principal, trace_id, policy_revision and
 * policy_body_hash, upstream, outcome, code, gate, run_id and step,
 * latency_ms, tokens_in and tokens_out (members left unset are absent). A
 * new object, NULL on OOM. */
json_t *aw_envelope_json(const aw_envelope *e);

#endif
