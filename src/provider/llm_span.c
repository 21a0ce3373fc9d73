/*
 * llm_span.c - an LLM call's span (otel.h), described when the call ends
 * (llm_record_queue): a CLIENT span under its caller's (the API request's,
 * or the run step's), with the OpenTelemetry GenAI conventions' attributes -
 * operation, provider, the model asked and the one that answered, tokens -
 * and the gateway's own (route, upstream, outcome, attempts). Its span id is
 * the one the upstream received in traceparent. Never a prompt, a
 * completion or an upstream's error text (it may quote the prompt): a failed
 * call says its stable code and outcome only.
 */
#include <string.h>

#include "awooop/otel.h"
#include "provider_internal.h"

void llm_span(const aw_llm_call *c)
{
	if (!aw_otel_on())
		return;
	const char *op = c->rq.embeddings ? "embeddings" : "chat";
	aw_span *s = aw_span_begin(op, AW_SPAN_CLIENT, &c->ctx.trace, c->parent_span, 0, c->t0_ns);
	if (!s)
		return;
	/* named by the model asked once a route took it (an unknown model's
	 * name, a client's word, stays out of the span's name) */
	aw_span_name(s, op, c->route[0] ? c->rq.model : NULL);
	aw_span_project(s, c->ctx.project);
	aw_span_str(s, "gen_ai.operation.name", op);
	/* the wire kind of the target the call ended on (the first one when it
	 * never reached one) */
	const upstream *u = c->nt > 0 ? c->t[c->ti < c->nt ? c->ti : 0].u : NULL;
	if (u) {
		/* the semantic conventions' names of the wire kinds */
		const char *provider = u->api == API_OLLAMA	 ? "ollama"
				       : u->api == API_ANTHROPIC ? "anthropic"
				       : u->api == API_AZURE	 ? "azure.ai.openai"
								 : "openai";
		aw_span_str(s, "gen_ai.provider.name", provider);
		aw_span_str(s, "gen_ai.system", provider); /* its name before semconv 1.37 */
	}
	aw_span_str(s, "gen_ai.request.model", c->rq.model);
	if (c->model_used[0])
		aw_span_str(s, "gen_ai.response.model", c->model_used);
	if (c->st.id[0] && strcmp(c->outcome, "refused") != 0)
		aw_span_str(s, "gen_ai.response.id", c->st.id);
	if (c->st.tokens_in || c->st.tokens_out) {
		aw_span_int(s, "gen_ai.usage.input_tokens", c->st.tokens_in);
		aw_span_int(s, "gen_ai.usage.output_tokens", c->st.tokens_out);
	}
	if (c->route[0])
		aw_span_str(s, "awooop.route", c->route);
	if (c->upstream_name[0])
		aw_span_str(s, "awooop.upstream", c->upstream_name);
	aw_span_str(s, "awooop.outcome", c->outcome);
	aw_span_int(s, "awooop.attempts", c->attempts);
	if (c->failovers)
		aw_span_int(s, "awooop.failovers", c->failovers);
	if (c->rq.stream)
		aw_span_str(s, "awooop.stream", "true");
	if (c->run_id[0]) {
		aw_span_str(s, "awooop.run.id", c->run_id);
		aw_span_int(s, "awooop.run.step", c->step_no);
	}
	if (strcmp(c->outcome, "ok") != 0)
		aw_span_error(s, c->code ? c->code : c->outcome, c->outcome);
	aw_span_end(s);
}
