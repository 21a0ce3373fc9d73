/*
 * client.c - the CLI's HTTP client (libcurl) for commands that act through a
 * running server: AWOOOP_URL (default http://127.0.0.1:8080) and AWOOOP_KEY.
 * The key is read from the environment only, never from argv (visible in ps).
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "awooop/trace.h"
#include "awooop/buf.h"
#include "cli.h"

#define CLIENT_MAX_BODY (16u << 20)

/* The answer, at most CLIENT_MAX_BODY bytes: past that the transfer fails. */
static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
	return aw_buf_add(ud, p, sz * n) == AW_OK ? sz * n : 0;
}

int aw_client_call(const char *method, const char *path, json_t *body, json_t **out)
{
	return aw_client_call_h(method, path, body, NULL, out);
}

int aw_client_call_h(const char *method, const char *path, json_t *body, const char *const *headers,
		     json_t **out)
{
	const char *base = getenv("AWOOOP_URL");
	const char *key = getenv("AWOOOP_KEY");
	if (!base || !*base)
		base = "http://127.0.0.1:8080";
	if (!key || !*key)
		return aw_cli_fail(AW_E_AUTH_MISSING, "set AWOOOP_KEY to an API key");
	char url[1024], auth[128], tp[AW_TRACEPARENT_LEN + 16];
	if ((size_t)snprintf(url, sizeof url, "%s%s", base, path) >= sizeof url)
		return aw_cli_fail(AW_E_CONFIG, "AWOOOP_URL and the request path are too long");
	if ((size_t)snprintf(auth, sizeof auth, "Authorization: Bearer %s", key) >= sizeof auth)
		return aw_cli_fail(AW_E_AUTH_INVALID, "AWOOOP_KEY is not an API key (too long)");
	aw_trace t;
	aw_trace_new(&t);
	char tps[AW_TRACEPARENT_LEN + 1];
	aw_trace_format(&t, tps);
	snprintf(tp, sizeof tp, "traceparent: %s", tps);

	char *payload = body ? json_dumps(body, JSON_COMPACT) : NULL;
	CURL *c = curl_easy_init();
	if (!c) {
		free(payload);
		return aw_cli_fail(AW_E_NOMEM, "cannot start HTTP client");
	}
	struct curl_slist *hdr = NULL;
	hdr = curl_slist_append(hdr, auth);
	int own_trace = 0;
	for (int i = 0; headers && headers[i]; i++) {
		hdr = curl_slist_append(hdr, headers[i]);
		own_trace |= strncasecmp(headers[i], "traceparent:", 12) == 0;
	}
	if (!own_trace)
		hdr = curl_slist_append(hdr, tp);
	hdr = curl_slist_append(hdr, "Accept: application/json");
	if (payload)
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
	aw_buf s = AW_BUF_INIT(CLIENT_MAX_BODY);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (payload)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload);
	CURLcode rc = curl_easy_perform(c);
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(c);
	free(payload);

	int exit_code = AW_EXIT_OK;
	if (rc != CURLE_OK) {
		char msg[512];
		snprintf(msg, sizeof msg, "cannot reach %s: %s", base, curl_easy_strerror(rc));
		exit_code = aw_cli_fail(AW_E_CLIENT, msg);
		goto out;
	}
	json_t *doc = s.len ? json_loads(aw_buf_str(&s), 0, NULL) : NULL;
	if (status >= 200 && status < 300) {
		if (out)
			*out = doc;
		else
			json_decref(doc);
		goto out;
	}
	const char *code = json_string_value(json_object_get(doc, "code"));
	const char *title = json_string_value(json_object_get(doc, "title"));
	const char *detail = json_string_value(json_object_get(doc, "detail"));
	fprintf(stderr, "awooop: %s: %s%s%s (HTTP %ld)\n", code ? code : "E-CLI-002",
		title ? title : "unexpected answer", detail ? ": " : "", detail ? detail : "",
		status);
	json_decref(doc);
	exit_code = AW_EXIT_FAIL;
out:
	aw_buf_free(&s);
	return exit_code;
}
