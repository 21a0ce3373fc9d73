/*
 * fuzz_llm_request.c - the gateway's request side: a client's chat
 * completion request checked (aw_llm_req_check), translated to Ollama's
 * /api/chat, and an upstream answer translated back (aw_llm_from_ollama,
 * aw_llm_completion_as_sse), plus the gateway configuration check.
 * Checks: no crash; an accepted request has a model and messages, and its
 * Ollama translation keeps one message per message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/llm.h"
#include "awooop/llm_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t je;
	json_t *req = json_loadb((const char *)data, size, 0, &je);
	if (!req)
		return 0;
	aw_llm_req rq;
	aw_error err = {0};
	if (aw_llm_req_check(req, &rq, &err) == AW_OK) {
		if (!rq.model || !json_array_size(json_object_get(req, "messages")))
			abort();
		json_t *o = NULL;
		if (aw_llm_to_ollama(req, rq.model, rq.stream, &o, &err) == AW_OK &&
		    json_array_size(json_object_get(o, "messages")) !=
			    json_array_size(json_object_get(req, "messages")))
			abort();
		json_decref(o);
	}
	aw_llm_stream_state st = {.created = 1, .model = "m"};
	snprintf(st.id, sizeof st.id, "chatcmpl-x");
	json_t *c = NULL;
	if (aw_llm_from_ollama(req, &st, &c, &err) == AW_OK) {
		aw_buf b = AW_BUF_INIT(1 << 24);
		aw_llm_completion_as_sse(c, 1, &b);
		aw_buf_free(&b);
		json_decref(c);
	}
	aw_buf b = AW_BUF_INIT(1 << 24);
	aw_llm_completion_as_sse(req, 0, &b);
	aw_buf_free(&b);
	aw_llm_completion_usage(req, &st);
	aw_llm_config_check(req, &err);
	json_decref(req);
	return 0;
}
