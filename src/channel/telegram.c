/*
 * telegram.c - the Telegram Bot API as the hub uses it: the update parser
 * (pure, fuzzed) and one call (POST JSON to <base>/bot<token>/<method>).
 * The token is part of the URL, so no URL is ever logged or put in an error;
 * answers over 4 MiB are refused.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/buf.h"
#include "awooop/channel.h"
#include "awooop/secret.h"
#include "awooop/str.h"
#include "channel_internal.h"

/* An id (chat, user) as decimal text: Telegram's are integers up to 52 bits. */
static void id_text(char *dst, size_t cap, const json_t *v)
{
	if (json_is_integer(v))
		snprintf(dst, cap, "%lld", (long long)json_integer_value(v));
	else
		dst[0] = 0;
}

aw_err aw_tg_update_parse(const json_t *u, aw_tg_update *out, aw_error *err)
{
	memset(out, 0, sizeof *out);
	json_t *id = json_object_get(u, "update_id");
	if (!json_is_object(u) || !json_is_integer(id) || json_integer_value(id) < 0)
		return aw_fail(err, AW_E_CHANNEL_UPDATE,
			       "an update is an object with an update_id");
	out->update_id = json_integer_value(id);
	AW_COPY_ARRAY(out->kind, "other");
	json_t *msg = json_object_get(u, "message");
	json_t *cb = json_object_get(u, "callback_query");
	if (json_is_object(msg)) {
		json_t *chat = json_object_get(msg, "chat"), *from = json_object_get(msg, "from");
		const char *text = json_string_value(json_object_get(msg, "text"));
		id_text(out->chat_id, sizeof out->chat_id, json_object_get(chat, "id"));
		id_text(out->user_id, sizeof out->user_id, json_object_get(from, "id"));
		json_t *mid = json_object_get(msg, "message_id");
		out->message_id = json_is_integer(mid) ? json_integer_value(mid) : 0;
		if (text && out->chat_id[0]) {
			if (AW_STR_COPY(out->text, text) < 0)
				return aw_fail(err, AW_E_CHANNEL_UPDATE,
					       "a message text is at most %zu bytes",
					       sizeof out->text - 1);
			if (text[0] == '/')
				AW_COPY_ARRAY(out->kind, "command");
			else
				AW_COPY_ARRAY(out->kind, "message");
		}
	} else if (json_is_object(cb)) {
		json_t *from = json_object_get(cb, "from");
		json_t *m = json_object_get(cb, "message");
		const char *data = json_string_value(json_object_get(cb, "data"));
		const char *cid = json_string_value(json_object_get(cb, "id"));
		id_text(out->user_id, sizeof out->user_id, json_object_get(from, "id"));
		id_text(out->chat_id, sizeof out->chat_id,
			json_object_get(json_object_get(m, "chat"), "id"));
		if (data && cid && *cid && out->user_id[0] &&
		    AW_STR_COPY(out->callback_id, cid) == 0) { /* else kind "other" */
			if (AW_STR_COPY(out->text, data) < 0)
				return aw_fail(err, AW_E_CHANNEL_UPDATE,
					       "callback data is at most %zu bytes",
					       sizeof out->text - 1);
			AW_COPY_ARRAY(out->kind, "callback");
		}
	}
	return AW_OK;
}

/* ---- calls ---- */

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	size_t len = size * n;
	return aw_buf_add(ud, p, len) == AW_OK ? len : 0;
}

static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	(void)a, (void)b, (void)c, (void)d;
	return ud && atomic_load((const atomic_bool *)ud);
}

aw_err tg_call(const char *base, const char *token, const char *method, const json_t *params,
	       int timeout_s, const atomic_bool *stop, json_t **result, tg_status *st,
	       aw_error *err)
{
	*result = NULL;
	memset(st, 0, sizeof *st);
	char *body = json_dumps(params, JSON_COMPACT);
	aw_buf url = AW_BUF_INIT(4096), resp = AW_BUF_INIT(4u << 20);
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
	aw_err e = AW_OK;
	if (!body || !h || !hdr || aw_buf_addf(&url, "%s/bot%s/%s", base, token, method)) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
		goto out;
	}
	curl_easy_setopt(h, CURLOPT_URL, aw_buf_str(&url));
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)timeout_s);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	if (stop) {
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, (void *)stop);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	}
	CURLcode rc = curl_easy_perform(h);
	long code = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	st->http = (int)code;
	if (rc != CURLE_OK) { /* the message names no URL: it holds the token */
		st->network = 1;
		e = aw_fail(err, AW_E_CHANNEL_UPSTREAM, "Bot API %s: %s", method,
			    rc == CURLE_OPERATION_TIMEDOUT ? "timed out" : "network error");
		goto out;
	}
	json_error_t je;
	json_t *doc = json_loadb(aw_buf_str(&resp), resp.len, 0, &je);
	if (!json_is_object(doc)) {
		json_decref(doc);
		e = aw_fail(err, AW_E_CHANNEL_UPSTREAM, "Bot API %s answered HTTP %ld without JSON",
			    method, code);
		goto out;
	}
	if (json_is_true(json_object_get(doc, "ok"))) {
		*result = json_incref(json_object_get(doc, "result"));
	} else {
		json_t *ec = json_object_get(doc, "error_code");
		st->code = json_is_integer(ec) ? (int)json_integer_value(ec) : (int)code;
		json_t *ra = json_object_get(json_object_get(doc, "parameters"), "retry_after");
		st->retry_after_s = json_is_integer(ra) ? (int)json_integer_value(ra) : 0;
		snprintf(st->description, sizeof st->description, "%.150s",
			 json_string_value(json_object_get(doc, "description"))
				 ? json_string_value(json_object_get(doc, "description"))
				 : "");
		e = aw_fail(err, AW_E_CHANNEL_UPSTREAM, "Bot API %s: %d %s", method, st->code,
			    st->description);
	}
	json_decref(doc);
out:
	if (hdr)
		curl_slist_free_all(hdr);
	if (h)
		curl_easy_cleanup(h);
	aw_secret_wipe(&url);
	aw_buf_free(&resp);
	free(body);
	return e;
}
