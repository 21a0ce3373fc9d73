/*
 * webhook.c - webhook mode: the leader registers a webhook bot with
 * setWebhook, and Telegram posts its updates to the API, which hands each
 * one here: the bot's secret checked in constant time, then acted on and
 * committed as a polled update is (inbound.c).
 */
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/buf.h"
#include "awooop/crypto.h"
#include "awooop/log.h"
#include "awooop/policy.h"
#include "awooop/secret.h"
#include "channel_internal.h"

/* setWebhook for a webhook bot: Telegram posts its updates to
 * <--channel-webhook-url>/v1/channels/telegram/<project>/<bot> with the
 * bot's secret token, which the API checks. */
aw_err hub_set_webhook(aw_hub *h, hub_bot *b)
{
	aw_ctx ctx;
	aw_ctx_system(&ctx, b->project);
	aw_error err = {0};
	aw_buf tok = AW_BUF_INIT(4096), sec = AW_BUF_INIT(4096), url = AW_BUF_INIT(2048);
	const char *ref = json_string_value(json_object_get(b->channel, "webhook_secret"));
	aw_err e = AW_OK;
	if (!h->webhook_base[0])
		e = aw_fail(&err, AW_E_CONFIG, "a webhook bot needs --channel-webhook-url");
	else if (!(e = hub_resolve_token(&h->o, b, &tok, &err)) &&
		 !(e = aw_secret_tenant_resolve(b->project, h->o.secrets_dir, ref ? ref : "", &sec,
						&err))) {
		aw_buf_addf(&url, "%s/v1/channels/telegram/%s/%s", h->webhook_base, b->project,
			    b->name);
		json_t *p =
			json_pack("{s:s, s:s, s:[s, s]}", "url", aw_buf_str(&url), "secret_token",
				  aw_buf_str(&sec), "allowed_updates", "message", "callback_query");
		json_t *res = NULL;
		tg_status st;
		e = tg_call(h->api, aw_buf_str(&tok), "setWebhook", p, 15, &h->quit, &res, &st,
			    &err);
		json_decref(res);
		json_decref(p);
	}
	if (e)
		aw_log(AW_LOG_ERROR, &ctx, "channel webhook not set", "bot", b->name, "code",
		       aw_err_code(e), "detail", err.msg, NULL);
	else
		aw_log(AW_LOG_INFO, &ctx, "channel webhook set", "bot", b->name, NULL);
	aw_secret_wipe(&tok);
	aw_secret_wipe(&sec);
	aw_buf_free(&url);
	return e;
}

/* Every refusal before the secret matched answers alike - no such project,
 * no such bot, a polling bot, a wrong or missing secret - so nobody without
 * the secret learns which projects and bots exist. */
static aw_err webhook_refused(aw_error *err)
{
	return aw_fail(err, AW_E_CHANNEL_WEBHOOK,
		       "no webhook here takes that X-Telegram-Bot-Api-Secret-Token");
}

aw_err aw_channel_webhook(const aw_hub_opts *o, const char *project, const char *bot,
			  const char *secret, const char *body, size_t len, aw_error *err)
{
	if (!o || !project || strlen(project) > AW_PROJECT_MAX || !bot)
		return webhook_refused(err);
	aw_ctx pc;
	aw_ctx_system(&pc, project);
	aw_policy pol;
	aw_error ignored = {0};
	if (aw_policy_effective(o->policy, &pc, "channel_event",
				o->contract_id ? o->contract_id : "default", &pol, &ignored))
		return webhook_refused(err);
	size_t i;
	json_t *ch;
	hub_bot *b = NULL;
	json_array_foreach (json_object_get(pol.body, "channels"), i, ch)
		if (!b &&
		    !strcmp(json_string_value(json_object_get(json_object_get(ch, "bot"), "name"))
				    ?: "",
			    bot))
			b = hub_bot_from(project, &pol, ch);
	aw_policy_release(&pol);
	if (!b || !b->webhook) {
		if (b)
			hub_bot_free(b);
		return webhook_refused(err);
	}
	/* the secret, compared in constant time (as digests: no length leak) */
	aw_buf sec = AW_BUF_INIT(4096);
	const char *ref = json_string_value(json_object_get(b->channel, "webhook_secret"));
	uint8_t want[32], got[32];
	aw_err e = aw_secret_tenant_resolve(project, o->secrets_dir, ref ? ref : "", &sec, err);
	if (!e) {
		aw_sha256(aw_buf_str(&sec), sec.len, want);
		aw_sha256(secret ? secret : "", secret ? strlen(secret) : 0, got);
		if (!secret || !aw_ct_equal(want, got, sizeof want))
			e = webhook_refused(err);
	} else {
		aw_log(AW_LOG_WARN, &pc,
		       "a webhook's secret is unavailable: its updates are refused", "bot", bot,
		       "detail", err->msg, NULL);
		e = webhook_refused(err);
	}
	aw_secret_wipe(&sec);
	json_error_t je;
	json_t *u = e ? NULL : json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &je);
	pending *p = e ? NULL : aw_calloc(1, sizeof *p);
	if (!e && !p)
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	if (!e && !(e = aw_tg_update_parse(u, &p->u, err))) {
		hub_act(o, b, p);
		e = hub_commit_batch(o, b, 0, p, 1, 0, err);
	}
	if (p)
		free(p->redacted);
	free(p);
	json_decref(u);
	hub_bot_free(b);
	return e;
}
