/*
 * fuzz_redact_custom.c - a project's custom pattern list (redact.h): the
 * first line is the list as JSON, the rest a text. A list is refused with
 * E-REDACT-001 and a reason, or compiles into at most 16 patterns whose
 * every match is non-empty; a compiled list then redacts the text (as a
 * string and as a stream) within its limits (libFuzzer's -timeout catches
 * one that does not), and every custom marker it writes names a pattern of
 * the list unless the text held that marker already.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/redact.h"

static int64_t version;

static int discard(void *ud, const char *d, size_t n)
{
	(void)d;
	*(size_t *)ud += n;
	return 0;
}

/* each "[REDACTED:custom:NAME]" of out names an entry of list or was in in */
static void markers_named(const char *in, const char *out, const json_t *list)
{
	const char *tag = "[REDACTED:custom:";
	for (const char *p = strstr(out, tag); p; p = strstr(p + 1, tag)) {
		const char *name = p + strlen(tag), *end = strchr(name, ']');
		if (!end) { /* only the text's own, unterminated */
			if (!strstr(in, tag))
				abort();
			return;
		}
		int found = 0;
		size_t i;
		json_t *it;
		json_array_foreach (list, i, it) {
			const char *n = json_string_value(json_object_get(it, "name"));
			if (strlen(n) == (size_t)(end - name) &&
			    !memcmp(n, name, (size_t)(end - name)))
				found = 1;
		}
		if (!found && !strstr(in, tag))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t llen = nl ? (size_t)(nl - data) : size;
	json_t *list = json_loadb((const char *)data, llen, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (!list)
		return 0;
	aw_redact_custom *c = NULL;
	aw_error err = {0};
	aw_err e = aw_redact_custom_compile(list, &c, &err);
	if (e) {
		if ((e != AW_E_REDACT_PATTERN && e != AW_E_NOMEM) || c || !err.msg[0])
			abort();
		json_decref(list);
		return 0;
	}
	int n = aw_redact_custom_count(c);
	if (n < 0 || n > AW_REDACT_CUSTOM_MAX || (size_t)n != json_array_size(list))
		abort();
	if (!aw_redact_custom_install("fuzz", ++version, c))
		abort();
	const char *text = nl ? (const char *)nl + 1 : "";
	size_t tlen = nl ? size - llen - 1 : 0;
	char *in = strndup(text, tlen), *out = NULL;
	size_t outlen = 0;
	aw_redact_stats st = {0};
	if (in && aw_redact_text_for("fuzz", in, strlen(in), &out, &outlen, &st) == AW_OK) {
		if (!out || strlen(out) != outlen)
			abort();
		markers_named(in, out, list);
		free(out);
	}
	size_t emitted = 0;
	aw_redact_stream *s = aw_redact_stream_new_for("fuzz", discard, &emitted, NULL);
	if (s) {
		aw_redact_stream_feed(s, text, tlen);
		aw_redact_stream_finish(s);
	}
	free(in);
	json_decref(list);
	return 0;
}
