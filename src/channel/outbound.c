/*
 * outbound.c - the outbox of the channels: messages queued as rows (a
 * reply, an answer, progress, an operator's message), then delivered by
 * the leader's sender, per chat and per bot within the Bot API's rates,
 * never into a silenced chat, the same text to a chat within 10 minutes
 * once, retried with backoff; every delivery audited.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/audit.h"
#include "awooop/buf.h"
#include "awooop/clock.h"
#include "awooop/crypto.h"
#include "awooop/keys.h"
#include "awooop/kv.h"
#include "awooop/metrics.h"
#include "awooop/secret.h"
#include "awooop/store/channel.h"
#include "awooop/str.h"
#include "channel_internal.h"

/* the rates are kept with this margin: Telegram counts arrivals, and two
 * requests sent 1000 ms apart may arrive 995 ms apart */
#define JITTER_MS 50

/* One outbound row, due now; id (may be NULL) gets its message id. */
aw_err hub_queue(aw_txn *t, const char *bot, const char *chat, const char *method,
		 const char *purpose, const char *text, const json_t *markup, const char *target,
		 const char *run_id, const char *fingerprint, char *id, aw_error *err)
{
	aw_outbound m = {0};
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	aw_uuid7_str(m.msg_id);
	if (AW_STR_COPY(m.bot, bot) < 0 || AW_STR_COPY(m.chat_id, chat) < 0 ||
	    AW_STR_COPY(m.method, method) < 0 || AW_STR_COPY(m.purpose, purpose) < 0 ||
	    AW_STR_COPY(m.target_id, target) < 0 || AW_STR_COPY(m.run_id, run_id) < 0 ||
	    AW_STR_COPY(m.fingerprint, fingerprint) < 0)
		return aw_fail(err, AW_E_REQ_INVALID,
			       "a bot, chat, target, run id or fingerprint "
			       "is too long for an outbound message");
	m.text = (char *)text;
	m.markup = markup ? json_dumps(markup, JSON_COMPACT) : NULL;
	memcpy(m.next_at, now, sizeof now);
	memcpy(m.created_at, now, sizeof now);
	aw_err e = aw_store_outbound_put(t, &m, err);
	free(m.markup);
	if (!e && id)
		memcpy(id, m.msg_id, sizeof m.msg_id);
	return e;
}

aw_err aw_channel_send(aw_store *s, const aw_ctx *ctx, const char *bot, const char *chat_id,
		       const char *text, const char *fingerprint, char msg_id[AW_UUID_STR_LEN + 1],
		       aw_error *err)
{
	if (!bot || !*bot || strlen(bot) > AW_BOT_NAME_MAX)
		return aw_fail_at(err, AW_E_REQ_INVALID, "bot", "bot must name a channel bot");
	if (!chat_id || !*chat_id || strlen(chat_id) > AW_CHAT_ID_MAX ||
	    strspn(chat_id + (chat_id[0] == '-'), "0123456789") !=
		    strlen(chat_id) - (chat_id[0] == '-'))
		return aw_fail_at(err, AW_E_REQ_INVALID, "chat_id", "chat_id must be a chat id");
	if (!text || !*text || strlen(text) > 4096)
		return aw_fail_at(err, AW_E_REQ_INVALID, "text", "text must be 1..4096 bytes");
	char fp[65];
	if (fingerprint && (strlen(fingerprint) > 64 || aw_keys_component_ok(fingerprint)))
		return aw_fail_at(err, AW_E_REQ_INVALID, "fingerprint",
				  "fingerprint must be 1..64 characters without ':' or spaces");
	if (!fingerprint) { /* the same text to the same chat */
		aw_buf b = AW_BUF_INIT(8192);
		aw_buf_addf(&b, "%s\n%s\n%s", bot, chat_id, text);
		aw_sha256_hex(aw_buf_str(&b), b.len, fp);
		aw_buf_free(&b);
		fingerprint = fp;
	}
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err);
	if (e)
		return e;
	char id[AW_UUID_STR_LEN + 1];
	e = hub_queue(t, bot, chat_id, "send", "notify", text, NULL, NULL, NULL, fingerprint, id,
		      err);
	/* the audit record redacts its payload (the text) itself */
	json_t *pl = json_pack("{s:s, s:s, s:s}", "bot", bot, "chat_id", chat_id, "text", text);
	if (!e)
		e = aw_audit_record(t, ctx, "channel.queued", id, pl, err);
	json_decref(pl);
	if (e) {
		aw_store_rollback(t);
		return e;
	}
	if ((e = aw_store_commit(t, err)))
		return e;
	memcpy(msg_id, id, sizeof id);
	return AW_OK;
}

static chat_slot *chat_of(aw_hub *h, const hub_bot *b, const char *chat)
{
	char key[sizeof h->chats[0].key];
	snprintf(key, sizeof key, "%s/%s/%s", b->project, b->name, chat);
	uint8_t d[32];
	aw_sha256(key, strlen(key), d);
	unsigned i = (unsigned)(d[0] | d[1] << 8) % MAX_CHATS;
	for (int k = 0; k < MAX_CHATS; k++, i = (i + 1) % MAX_CHATS) {
		chat_slot *s = &h->chats[i];
		if (!s->key[0] || !strcmp(s->key, key)) {
			memcpy(s->key, key, sizeof key);
			return s;
		}
		if (hub_now_ms() - s->last_ms > 60000) { /* stale: reuse */
			memcpy(s->key, key, sizeof key);
			s->last_ms = 0;
			return s;
		}
	}
	return NULL;
}

static int bot_budget(hub_bot *b, int per_s)
{
	int64_t now = hub_now_ms(), in_window = 0;
	for (int i = 0; i < 64; i++)
		in_window += b->sent_ms[i] && now - b->sent_ms[i] < 1000 + JITTER_MS;
	return in_window < per_s;
}

static int silenced(aw_hub *h, const hub_bot *b, const char *chat)
{
	size_t i;
	json_t *s;
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	/* the contract's silences, and (cluster) the silence key an operator set */
	json_array_foreach (b->silences, i, s)
		if (!strcmp(json_string_value(json_object_get(s, "chat_id")) ?: "", chat) &&
		    strcmp(json_string_value(json_object_get(s, "until")) ?: "", now) > 0)
			return 1;
	if (!h->o.kv)
		return 0;
	aw_ctx ctx;
	aw_ctx_system(&ctx, b->project);
	char *v = NULL;
	const char *vals[] = {chat};
	aw_error err = {0};
	int on = aw_kv_get(h->o.kv, &ctx, "telegram_silence", vals, 1, &v, &err) == AW_OK && v;
	free(v);
	return on;
}

/* ---- the fingerprint's claim (identical text to a chat within 10 minutes
 * is sent once) ----
 *
 * The claim is taken before the send and names the message that took it
 * ({project}:tg_sent:{fingerprint} = msg id; in-process in the embedded
 * shape); it is dropped again when the send did not happen. A message is
 * deduplicated only against a claim whose message the store says was sent:
 * a claim can outlive its leader (SIGKILLed with the send in flight), and
 * then it says "claimed", not "sent". Its own claim is sent again - whether
 * Telegram got the first send nobody can tell (the Bot API has no
 * idempotency key): at least once, never zero times. */

#define FP_TTL_S 600

enum { FP_SEND, FP_DUP, FP_WAIT };

/* Who holds the fingerprint: 1 and holder filled, 0 nobody, -1 unknown. */
static int fp_holder(aw_hub *h, const hub_bot *b, const char *fp, char holder[AW_UUID_STR_LEN + 1])
{
	holder[0] = 0;
	if (!h->o.kv) {
		char key[AW_PROJECT_MAX + 70];
		snprintf(key, sizeof key, "%s/%s", b->project, fp);
		json_t *c = json_object_get(h->sent_fp, key);
		if (!c || hub_now_ms() - json_integer_value(json_object_get(c, "at")) >=
				  (int64_t)FP_TTL_S * 1000)
			return 0;
		/* a message id, or unknown (never a cut one) */
		return aw_str_copy(holder, AW_UUID_STR_LEN + 1,
				   json_string_value(json_object_get(c, "id"))) < 0
			       ? -1
			       : 1;
	}
	aw_ctx ctx;
	aw_ctx_system(&ctx, b->project);
	const char *vals[] = {fp};
	char *v = NULL;
	aw_error err = {0};
	if (aw_kv_get(h->o.kv, &ctx, "tg_sent", vals, 1, &v, &err))
		return -1;
	int rc = !v ? 0 : aw_str_copy(holder, AW_UUID_STR_LEN + 1, v) < 0 ? -1 : 1;
	free(v);
	return rc;
}

/* Takes the fingerprint for m: only if nobody holds it (nx; *taken says
 * whether it did), or over a holder whose message was not sent. */
static aw_err fp_take(aw_hub *h, const hub_bot *b, const aw_outbound *m, int nx, int *taken)
{
	*taken = 1;
	if (!h->o.kv) {
		char key[AW_PROJECT_MAX + 70], held[AW_UUID_STR_LEN + 1];
		snprintf(key, sizeof key, "%s/%s", b->project, m->fingerprint);
		int64_t now = hub_now_ms();
		if (nx && fp_holder(h, b, m->fingerprint, held) == 1) {
			*taken = 0;
			return AW_OK;
		}
		if (json_object_size(h->sent_fp) > 100000) { /* forget the expired */
			const char *k;
			json_t *v;
			void *tmp;
			json_object_foreach_safe (h->sent_fp, tmp, k, v)
				if (now - json_integer_value(json_object_get(v, "at")) >=
				    (int64_t)FP_TTL_S * 1000)
					json_object_del(h->sent_fp, k);
		}
		json_object_set_new(
			h->sent_fp, key,
			json_pack("{s:s, s:I}", "id", m->msg_id, "at", (json_int_t)now));
		return AW_OK;
	}
	aw_ctx ctx;
	aw_ctx_system(&ctx, b->project);
	const char *vals[] = {m->fingerprint};
	aw_error err = {0};
	if (nx)
		return aw_kv_set_nx(h->o.kv, &ctx, "tg_sent", vals, 1, m->msg_id, FP_TTL_S, taken,
				    &err);
	return aw_kv_set(h->o.kv, &ctx, "tg_sent", vals, 1, m->msg_id, FP_TTL_S, &err);
}

/* Drops m's claim (a send that did not happen): a retry, or another message
 * with the same text, may send it. Another holder's claim stays. */
static void fp_drop(aw_hub *h, const hub_bot *b, const aw_outbound *m)
{
	char held[AW_UUID_STR_LEN + 1];
	if (!m->fingerprint[0] || fp_holder(h, b, m->fingerprint, held) != 1 ||
	    strcmp(held, m->msg_id))
		return; /* one sender at a time: nobody takes it in between */
	if (!h->o.kv) {
		char key[AW_PROJECT_MAX + 70];
		snprintf(key, sizeof key, "%s/%s", b->project, m->fingerprint);
		json_object_del(h->sent_fp, key);
		return;
	}
	aw_ctx ctx;
	aw_ctx_system(&ctx, b->project);
	const char *vals[] = {m->fingerprint};
	aw_error err = {0};
	aw_kv_del(h->o.kv, &ctx, "tg_sent", vals, 1, &err);
}

/* The state of the message that holds a claim, from the store. */
static aw_err holder_state(aw_hub *h, const char *project, const char *msg_id, char state[16])
{
	aw_ctx ctx;
	aw_ctx_system(&ctx, project);
	aw_error err = {0};
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(h->o.store, &ctx, AW_TXN_READ, &t, &err);
	if (e)
		return e;
	e = aw_store_outbound_state(t, msg_id, state, &err);
	aw_store_rollback(t);
	return e;
}

/* FP_SEND: m holds its fingerprint's claim now (or has none), send it;
 * FP_DUP: a message with the same text was sent within the window;
 * FP_WAIT: one holds the claim whose send is not settled yet (its leader
 * died with it in flight; it is due again): m goes after it. */
static int claim(aw_hub *h, const hub_bot *b, const aw_outbound *m)
{
	if (!m->fingerprint[0])
		return FP_SEND;
	for (int round = 0; round < 2; round++) {
		int taken = 0;
		if (fp_take(h, b, m, 1, &taken))
			return FP_SEND; /* Redis down: deliver rather than lose */
		if (taken)
			return FP_SEND;
		char holder[AW_UUID_STR_LEN + 1], state[16];
		int held = fp_holder(h, b, m->fingerprint, holder);
		if (held < 0)
			return FP_SEND;
		if (held == 0)
			continue; /* expired in between: take it again */
		if (!strcmp(holder, m->msg_id))
			return FP_SEND; /* its own: a leader died between send and mark */
		if (holder_state(h, b->project, holder, state))
			return FP_WAIT; /* the store cannot say: ask again later */
		if (!strcmp(state, "sent"))
			return FP_DUP;
		if (!strcmp(state, "pending"))
			return FP_WAIT;
		/* its holder was not delivered (failed, or no such message) */
		fp_take(h, b, m, 0, &taken);
		return FP_SEND;
	}
	return FP_SEND;
}

static int64_t backoff_ms(int attempts)
{
	int64_t d = 1000;
	for (int i = 1; i < attempts && d < 60000; i++)
		d *= 2;
	if (d > 60000)
		d = 60000;
	uint32_t r = 0;
	aw_random_bytes(&r, sizeof r);
	return d * 3 / 4 + (int64_t)(r % (uint32_t)(d / 2 + 1)); /* +-25% */
}

/* Delivers one message; the row's new state is written by the caller. */
static void deliver(aw_hub *h, hub_bot *b, const aw_outbound *m, const char *token, char *state,
		    char *next_at, char *error, int64_t *tg_id)
{
	json_t *p;
	const char *method;
	json_t *markup = m->markup ? json_loads(m->markup, 0, NULL) : NULL;
	if (!strcmp(m->method, "answer")) {
		method = "answerCallbackQuery";
		p = json_pack("{s:s, s:s}", "callback_query_id", m->target_id, "text", m->text);
	} else if (!strcmp(m->method, "edit")) {
		method = "editMessageText";
		p = json_pack("{s:s, s:I, s:s}", "chat_id", m->chat_id, "message_id",
			      (json_int_t)strtoll(m->target_id, NULL, 10), "text", m->text);
	} else {
		method = "sendMessage";
		p = json_pack("{s:s, s:s, s:o*}", "chat_id", m->chat_id, "text", m->text,
			      "reply_markup", markup);
		markup = NULL;
		long long to = m->target_id[0] ? strtoll(m->target_id, NULL, 10) : 0;
		if (p &&
		    to > 0) /* a reply to the message that started the run, if it is still there */
			json_object_set_new(p, "reply_parameters",
					    json_pack("{s:I, s:b}", "message_id", (json_int_t)to,
						      "allow_sending_without_reply", 1));
	}
	json_decref(markup);
	json_t *res = NULL;
	tg_status st;
	aw_error err = {0};
	aw_err e = tg_call(h->api, token, method, p, 15, &h->quit, &res, &st, &err);
	json_decref(p);
	if (!e) {
		json_t *mid = json_object_get(res, "message_id");
		*tg_id = json_is_integer(mid) ? json_integer_value(mid) : 0;
		snprintf(state, 16, "sent");
	} else if (st.code == 400 && strstr(st.description, "message is not modified")) {
		snprintf(state, 16, "sent"); /* the text is already what we want */
	} else if (st.code == 429 || st.network || st.http >= 500 || st.code >= 500) {
		int64_t wait = st.code == 429 && st.retry_after_s > 0
				       ? (int64_t)st.retry_after_s * 1000
				       : backoff_ms(m->attempts + 1);
		aw_clock_format(aw_clock_wall_ms() + wait, next_at);
		snprintf(state, 16, "pending");
		snprintf(error, 160, "%.150s", err.msg);
	} else {
		snprintf(state, 16, "failed");
		snprintf(error, 160, "%.150s", err.msg);
	}
	json_decref(res);
}

static void mark(aw_hub *h, const char *project, const aw_outbound *m, const char *state,
		 const char *next_at, const char *error, int64_t tg_id)
{
	aw_ctx ctx;
	aw_ctx_system(&ctx, project);
	aw_error err = {0};
	aw_txn *t = NULL;
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	if (aw_store_begin(h->o.store, &ctx, AW_TXN_WRITE, &t, &err))
		return;
	int retry = !strcmp(state, "pending");
	aw_err e = aw_store_outbound_mark(t, m->msg_id, state, m->attempts + 1,
					  next_at[0] ? next_at : NULL, error[0] ? error : NULL,
					  tg_id, now, &err);
	if (!e && !strcmp(m->purpose, "progress") && !strcmp(m->method, "send") && tg_id)
		e = aw_store_conv_run_set(t, m->run_id, tg_id, NULL, -1, -1, &err);
	if (!e && !retry) {
		json_t *pl = json_pack("{s:s, s:s, s:s, s:s, s:i, s:s?}", "bot", m->bot, "chat_id",
				       m->chat_id, "method", m->method, "state", state, "attempts",
				       m->attempts + 1, "error", error[0] ? error : NULL);
		e = aw_audit_record(t, &ctx, "channel.outbound", m->msg_id, pl, &err);
		json_decref(pl);
	}
	if (e)
		aw_store_rollback(t);
	else
		aw_store_commit(t, &err);
	aw_metrics_channel(project, "out", retry ? "retried" : state);
}

void hub_send_project(aw_hub *h, const char *project)
{
	aw_ctx ctx;
	aw_ctx_system(&ctx, project);
	aw_error err = {0};
	aw_txn *t = NULL;
	aw_outbound *ms = NULL;
	int n = 0;
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	if (aw_store_begin(h->o.store, &ctx, AW_TXN_READ, &t, &err))
		return;
	aw_err e = aw_store_outbound_due(t, now, 200, &ms, &n, &err);
	aw_store_rollback(t);
	if (e)
		return;
	char blocked[64][AW_CHAT_ID_MAX + AW_BOT_NAME_MAX + 2]; /* keep each chat in order */
	int nb = 0;
	for (int i = 0; i < n && hub_may_send(h) && !hub_stopping(h); i++) {
		aw_outbound *m = &ms[i];
		char ck[sizeof blocked[0]];
		snprintf(ck, sizeof ck, "%s/%s", m->bot, m->chat_id);
		int skip = 0;
		for (int k = 0; k < nb; k++)
			skip |= !strcmp(blocked[k], ck);
		if (skip)
			continue;
		pthread_mutex_lock(&h->mu);
		hub_bot *b = hub_bot_named(h, project, m->bot);
		pthread_mutex_unlock(&h->mu);
		char state[16] = "", next_at[AW_TS_LEN + 1] = "", error[160] = "";
		int64_t tg_id = 0;
		if (!b) { /* gone from the contract (or not loaded yet): retried a few
			   times a minute apart, then failed */
			char later[AW_TS_LEN + 1];
			aw_clock_format(aw_clock_wall_ms() + 60000, later);
			mark(h, project, m, m->attempts >= 4 ? "failed" : "pending",
			     m->attempts >= 4 ? "" : later, "the channel has no such bot", 0);
			continue;
		}
		int answer = !strcmp(m->method, "answer");
		chat_slot *cs = answer ? NULL : chat_of(h, b, m->chat_id);
		if ((!answer && !cs) ||
		    (cs && hub_now_ms() - cs->last_ms < h->o.per_chat_ms + JITTER_MS) ||
		    (!answer && !bot_budget(b, h->o.per_bot_per_s))) {
			if (nb < 64)
				AW_COPY_ARRAY(blocked[nb++], ck);
			continue;
		}
		if (!answer && silenced(h, b, m->chat_id)) {
			mark(h, project, m, "silenced", "", "", 0);
			continue;
		}
		int c = claim(h, b, m);
		if (c == FP_DUP) {
			mark(h, project, m, "deduplicated", "", "", 0);
			continue;
		}
		if (c == FP_WAIT) { /* after the message that holds the claim */
			if (nb < 64)
				AW_COPY_ARRAY(blocked[nb++], ck);
			continue;
		}
		aw_buf tok = AW_BUF_INIT(4096);
		if (hub_resolve_token(&h->o, b, &tok, &err)) {
			aw_secret_wipe(&tok);
			fp_drop(h, b, m);
			mark(h, project, m, "pending", "", err.msg, 0);
			continue;
		}
		if (!answer) {
			cs->last_ms = hub_now_ms();
			b->sent_ms[b->sent_next++ % 64] = cs->last_ms;
		}
		deliver(h, b, m, aw_buf_str(&tok), state, next_at, error, &tg_id);
		aw_secret_wipe(&tok);
		if (strcmp(state, "sent"))
			fp_drop(h, b, m); /* not delivered: a retry (or the same text) may be */
		mark(h, project, m, state, next_at, error, tg_id);
		if (!strcmp(state, "pending") && nb < 64)
			AW_COPY_ARRAY(blocked[nb++], ck);
	}
	aw_outbound_free(ms, n);
}
