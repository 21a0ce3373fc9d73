/*
 * h_channel.c - POST /v1/projects/{project}/channels/{bot}/messages
 * {"chat_id", "text", "fingerprint"?}: queues a message for the bot's chat
 * (operator); the channel hub's leader delivers it (202 with its id).
 * POST /v1/channels/telegram/{project}/{bot}: webhook mode, open - Telegram
 * posts one update with X-Telegram-Bot-Api-Secret-Token, the credential.
 */
#include <string.h>

#include "awooop/channel.h"
#include "awooop/json.h"
#include "http_internal.h"

void h_channel_send(aw_req *r)
{
	static const char *const allowed[] = {"chat_id", "text", "fingerprint", NULL};
	aw_error err = {0};
	aw_ctx scoped;
	if (auth_or_reply(r) || project_or_reply(r, r->segs[2], AW_SCOPE_OPERATOR, &scoped) ||
	    json_body_or_reply(r))
		return;
	json_t *b = NULL;
	const char *chat = NULL, *text = NULL, *fp = NULL;
	aw_err e = aw_json_parse_object(r->body ? r->body : "", r->body_len, &b, &err);
	if (!e)
		e = aw_json_only(b, allowed, &err);
	if (!e)
		e = aw_json_str(b, "chat_id", 1, &chat, &err);
	if (!e)
		e = aw_json_str(b, "text", 1, &text, &err);
	if (!e)
		e = aw_json_str(b, "fingerprint", 0, &fp, &err);
	char id[AW_UUID_STR_LEN + 1];
	if (!e)
		e = aw_channel_send(r->store, &scoped, r->segs[4], chat, text, fp, id, &err);
	json_decref(b);
	if (e) {
		reply_problem(r, e, &err);
		return;
	}
	http_reply_json(r, 202, json_pack("{s:s, s:s}", "msg_id", id, "state", "pending"));
}

void h_channel_webhook(aw_req *r)
{
	aw_error err = {0};
	const char *secret = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
							 "X-Telegram-Bot-Api-Secret-Token");
	aw_err e = aw_channel_webhook(r->opts->channels, r->segs[3], r->segs[4], secret,
				      r->body ? r->body : "", r->body_len, &err);
	if (e) {
		reply_problem(r, e, &err);
		return;
	}
	http_reply_json(r, 200, json_pack("{s:b}", "ok", 1));
}
