/*
 * channel.h - the channel hub: Telegram bots of the projects' channel_event
 * contracts, in and out.
 *
 * Inbound: one leader across all hub processes (the lease
 * platform:telegram:polling:leader, SET NX PX and renewed; in-process in the
 * embedded shape) long-polls every bot. Per bot it first bumps the bot's
 * fence in the store; a batch of updates is mirrored (conversation_events),
 * acted on (a run started from a template, /status answered, an approval
 * button decided) and the next offset committed in one transaction that
 * only commits while the fence is still this leader's - so a leader that
 * dies loses nothing (its successor fetches from the committed offset) and
 * a deposed one processes nothing twice.
 *
 * Outbound: messages are outbound_messages rows written in the transaction
 * of what causes them; the leader's sender delivers them - at most 1 per
 * second per chat and 30 per second per bot (one sender at a time: the old
 * leader stops sending before its lease can expire), 429 honouring
 * retry_after, 5xx and network errors backed off with jitter, 400/403 failed
 * with the reason; identical text to a chat within 10 minutes is sent once
 * ({project}:tg_sent:{fingerprint} names the message that claimed it; a
 * message is deduplicated only against one the store marks sent), silenced
 * chats get nothing. At least once across a leader crash: a row is marked
 * sent only after Telegram answered, so the successor sends a message whose
 * send was in flight (perhaps a second time - the Bot API cannot tell).
 *
 * Progressive feedback: a run started from a conversation gets one progress
 * message, edited every progress_interval_s while its text changes, Approve /
 * Deny buttons while it waits for approval, and a final answer.
 */
#ifndef AWOOOP_CHANNEL_H
#define AWOOOP_CHANNEL_H

#include <jansson.h>
#include <stdint.h>

#include "awooop/ctx.h"
#include "awooop/store.h"

/* ---- the Telegram update parser (pure; fuzzed) ---- */
typedef struct {
	int64_t update_id;
	char kind[16]; /* message | command | callback | other */
	char chat_id[25], user_id[25];
	/* message text or callback data: Telegram's at most 4096 UTF-16 units,
	 * at most 3 UTF-8 bytes each; longer is no Telegram update's */
	char text[3 * 4096 + 1];
	int64_t message_id;
	char callback_id[65];
} aw_tg_update;
/* AW_E_CHANNEL_UPDATE unless u is an update object with an integer
 * update_id (or its text is longer than Telegram allows: never cut);
 * anything it does not understand is kind "other". */
aw_err aw_tg_update_parse(const json_t *u, aw_tg_update *out, aw_error *err);

/* ---- the hub ---- */
struct aw_policy_cache;
struct aw_kv;
struct aw_approvals;
typedef struct aw_hub aw_hub;
typedef struct aw_hub_opts {
	aw_store *store;
	struct aw_policy_cache *policy; /* the projects' channel_event revisions */
	struct aw_kv *kv;		/* cluster shape; NULL: in-process lease */
	struct aw_approvals *approvals; /* Approve / Deny buttons (may be NULL) */
	const char *api_base;		/* default https://api.telegram.org */
	const char *secrets_dir;	/* root of file: token references */
	const char *contract_id;	/* default "default" */
	int poll_timeout_s;		/* getUpdates long-poll timeout; default 25 */
	int lease_ms;			/* leader lease; default 10000 */
	int tick_ms;			/* sender and feedback tick; default 100 */
	int per_chat_ms;		/* min interval per chat; default 1000 */
	int per_bot_per_s;		/* default 30 */
	const char *webhook_base;	/* public base URL for webhook bots (setWebhook) */
} aw_hub_opts;

aw_err aw_hub_start(const aw_hub_opts *o, aw_hub **out, aw_error *err);
/* Releases the lease (a successor takes over at once) and stops. */
void aw_hub_stop(aw_hub *h);

/* Webhook mode: one update Telegram posted for project's bot (a channel with
 * "mode": "webhook"), with its X-Telegram-Bot-Api-Secret-Token. The secret
 * is compared in constant time (E-CHANNEL-005); the update is handled as a
 * polled one (mirrored once: Telegram's retries find it). o: the hub's
 * environment (store, policy, approvals, secrets_dir, contract_id). */
aw_err aw_channel_webhook(const aw_hub_opts *o, const char *project, const char *bot,
			  const char *secret, const char *body, size_t len, aw_error *err);

/* Queues a message to a chat of ctx's project (the operator API, agents):
 * bot names the channel's bot; fingerprint (or NULL: the text's hash)
 * deduplicates for 10 minutes. *msg_id gets the outbound id. */
aw_err aw_channel_send(aw_store *s, const aw_ctx *ctx, const char *bot, const char *chat_id,
		       const char *text, const char *fingerprint, char msg_id[AW_UUID_STR_LEN + 1],
		       aw_error *err);

#endif
