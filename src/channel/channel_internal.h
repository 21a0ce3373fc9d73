/*
 * channel_internal.h - what the files of src/channel/ share.
 */
#ifndef AW_CHANNEL_INTERNAL_H
#define AW_CHANNEL_INTERNAL_H

#include <jansson.h>
#include <stdatomic.h>

#include "awooop/err.h"

typedef struct {
	int http;	   /* the HTTP status (0: none) */
	int network;	   /* no answer at all: connect error, timeout */
	int code;	   /* the Bot API's error_code when ok was false */
	int retry_after_s; /* parameters.retry_after of a 429 */
	char description[160];
} aw_tg_status;

/* POSTs params as JSON to <base>/bot<token>/<method> within timeout_s.
 * AW_OK with *result (new reference) when the answer is ok; otherwise
 * AW_E_CHANNEL_UPSTREAM with st filled. stop (may be NULL) true aborts the
 * call within 100 ms (a long poll at shutdown). The URL is never logged. */
aw_err aw_tg_call(const char *base, const char *token, const char *method, const json_t *params,
		  int timeout_s, const atomic_bool *stop, json_t **result, aw_tg_status *st,
		  aw_error *err);

#endif
