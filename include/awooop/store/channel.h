/*
 * store/channel.h - the channel hub's rows: bot offsets with their leader
 * fence, the mirror of inbound updates, the outbound outbox and the runs a
 * conversation started (channel.h is the service). Same conventions as
 * store.h: every call runs in the caller's transaction for its project.
 */
#ifndef AWOOOP_STORE_CHANNEL_H
#define AWOOOP_STORE_CHANNEL_H

#include <stdint.h>

#include "awooop/store.h"

#define AW_CHAT_ID_MAX 24
#define AW_BOT_NAME_MAX 32

typedef struct {
	int64_t update_id;
	char kind[16]; /* message | command | callback | other */
	char chat_id[AW_CHAT_ID_MAX + 1];
	char user_id[AW_CHAT_ID_MAX + 1];
	const char *text; /* redacted */
	char action[16];  /* run | status | approval | ignored | refused | poisoned */
	char run_id[AW_UUID_STR_LEN + 1];
} aw_conv_event;

typedef struct {
	char msg_id[AW_UUID_STR_LEN + 1];
	char bot[AW_BOT_NAME_MAX + 1];
	char chat_id[AW_CHAT_ID_MAX + 1];
	char method[8];	    /* send | edit | answer */
	char purpose[16];   /* reply | progress | final | prompt | notify | answer */
	char *text;	    /* malloc'd on reads */
	char *markup;	    /* malloc'd JSON on reads, or NULL */
	char target_id[40]; /* edit: the message id; answer: the callback query id */
	char run_id[AW_UUID_STR_LEN + 1];
	char fingerprint[65];
	char state[16];
	int attempts;
	char next_at[AW_TS_LEN + 1];
	char created_at[AW_TS_LEN + 1];
} aw_outbound;

typedef struct {
	char run_id[AW_UUID_STR_LEN + 1];
	char bot[AW_BOT_NAME_MAX + 1];
	char chat_id[AW_CHAT_ID_MAX + 1];
	int64_t progress_id; /* 0 none, -1 queued, > 0 the Telegram message id */
	char last_text[512];
	int prompted;
} aw_conv_run;

/* A new leader's claim on a bot: bumps the fence (creating the row) and reads
 * the next offset. */
aw_err aw_store_channel_lead(aw_txn *t, const char *bot, int64_t *fence, int64_t *next_offset,
			     aw_error *err);
/* Moves the offset; AW_E_CHANNEL_FENCED (nothing changed) when fence is no
 * longer the bot's: another leader took over. */
aw_err aw_store_channel_commit(aw_txn *t, const char *bot, int64_t fence, int64_t next_offset,
			       aw_error *err);
/* Counts a try at the batch that starts at offset (a try at another offset
 * starts the count again at 1) and returns the count in *tries; fenced as
 * aw_store_channel_commit. The leader's transaction of its own, committed
 * before it acts, so a crash while acting is counted too. */
aw_err aw_store_channel_try(aw_txn *t, const char *bot, int64_t fence, int64_t offset, int *tries,
			    aw_error *err);
/* *inserted = 0 when the update was mirrored already. */
aw_err aw_store_conv_event_put(aw_txn *t, const char *bot, const aw_conv_event *e, const char *at,
			       int *inserted, aw_error *err);
aw_err aw_store_outbound_put(aw_txn *t, const aw_outbound *m, aw_error *err);
/* Pending messages due at now, oldest first. Free with aw_outbound_free. */
aw_err aw_store_outbound_due(aw_txn *t, const char *now, int limit, aw_outbound **out, int *n,
			     aw_error *err);
void aw_outbound_free(aw_outbound *m, int n);
/* The outcome of a delivery attempt: state sent/failed/... or pending again
 * at next_at. */
aw_err aw_store_outbound_mark(aw_txn *t, const char *msg_id, const char *state, int attempts,
			      const char *next_at, const char *error, int64_t tg_message_id,
			      const char *now, aw_error *err);
/* One message's state ("" when there is no such message). */
aw_err aw_store_outbound_state(aw_txn *t, const char *msg_id, char state[16], aw_error *err);
/* Counts by state (tests, the operator). */
aw_err aw_store_outbound_count(aw_txn *t, const char *state, long long *n, aw_error *err);

aw_err aw_store_conv_run_put(aw_txn *t, const char *run_id, const char *bot, const char *chat_id,
			     aw_error *err);
aw_err aw_store_conv_runs_open(aw_txn *t, aw_conv_run **out, int *n, aw_error *err);
/* progress_id: 0 none, -1 its send is queued, > 0 the message; -2 keeps it.
 * last_text NULL, prompted -1 and done -1 keep theirs. */
aw_err aw_store_conv_run_set(aw_txn *t, const char *run_id, int64_t progress_id,
			     const char *last_text, int prompted, int done, aw_error *err);

#endif
