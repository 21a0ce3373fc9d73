/*
 * fuzz_tg_update.c - the Telegram update parser on arbitrary bytes (a
 * getUpdates answer's result array or one update): every parsed update has
 * a known kind, NUL-terminated fields within their buffers, and a callback
 * only with its id and data.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/channel.h"

static void check(const json_t *u)
{
	aw_tg_update t;
	aw_error err;
	if (aw_tg_update_parse(u, &t, &err) != AW_OK)
		return;
	if (strcmp(t.kind, "message") && strcmp(t.kind, "command") && strcmp(t.kind, "callback") &&
	    strcmp(t.kind, "other"))
		abort();
	if (strnlen(t.text, sizeof t.text) == sizeof t.text ||
	    strnlen(t.chat_id, sizeof t.chat_id) == sizeof t.chat_id ||
	    strnlen(t.user_id, sizeof t.user_id) == sizeof t.user_id || t.update_id < 0)
		abort();
	if (!strcmp(t.kind, "callback") && (!t.callback_id[0] || !t.user_id[0]))
		abort();
	if (!strcmp(t.kind, "command") && t.text[0] != '/')
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t je;
	json_t *doc = json_loadb((const char *)data, size, JSON_DECODE_ANY, &je);
	if (!doc)
		return 0;
	if (json_is_array(doc)) {
		size_t i;
		json_t *u;
		json_array_foreach (doc, i, u)
			check(u);
	} else {
		check(doc);
	}
	json_decref(doc);
	return 0;
}
