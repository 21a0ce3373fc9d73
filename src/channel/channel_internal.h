/*
 * channel_internal.h - what the files of src/channel/ share: the hub and
 * its bots, an update being handled, the Bot API call, and the functions
 * one file of the hub calls in another (named hub_* and tg_*: aw_* is
 * channel.h's public API).
 */
#ifndef AW_CHANNEL_INTERNAL_H
#define AW_CHANNEL_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "awooop/buf.h"
#include "awooop/channel.h"
#include "awooop/err.h"
#include "awooop/pattern.h"
#include "awooop/policy.h"
#include "awooop/run.h"
#include "awooop/store/channel.h"

#define MAX_CHATS 4096

typedef struct hub_bot {
	char project[AW_PROJECT_MAX + 1], name[AW_BOT_NAME_MAX + 1];
	char hash[65]; /* of its configuration: a change restarts the poller */
	json_t *channel, *templates, *silences; /* private deep copies */
	aw_pattern **match; /* rule i's compiled "match" (NULL: it has none, or it
			       does not compile: the rule never matches then) */
	int interval_s;
	struct aw_hub *hub;
	pthread_t th;
	int started; /* its poller thread runs */
	int webhook; /* mode webhook: no poller; Telegram posts to the API */
	int active;  /* polled, or its webhook set */
	atomic_bool stop;
	int64_t sent_ms[64]; /* the bot's last sends, a ring (per-bot rate) */
	int sent_next;
	struct hub_bot *next;
} hub_bot;

typedef struct {
	char key[AW_PROJECT_MAX + AW_BOT_NAME_MAX + AW_CHAT_ID_MAX + 3];
	int64_t last_ms;
} chat_slot;

struct aw_hub {
	aw_hub_opts o;
	char api[256], holder[96], contract[AW_PROJECT_MAX + 1], webhook_base[512];
	pthread_t lead_th, work_th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stopping;
	atomic_bool quit; /* stopping, for Bot API calls in flight (they abort) */
	atomic_int leader;
	_Atomic int64_t send_until_ns; /* sending allowed until (monotonic) */
	hub_bot *bots;		       /* guarded by mu; pollers read their own */
	hub_bot *graveyard;	       /* replaced bots: the sender may still hold one */
	chat_slot chats[MAX_CHATS];    /* per-chat last send (work thread only) */
	json_t *edits;		       /* run id -> last edit ms (work thread only) */
	json_t *sent_fp;	       /* embedded: fingerprint -> sent ms (work thread only) */
};

/* An update being handled: what it does, then its mirror row. */
typedef struct {
	aw_tg_update u;
	aw_conv_event ev;
	char reply[512];  /* a reply to the chat, or "" */
	char answer[200]; /* an answerCallbackQuery text, or "" */
	char *redacted;
} pending;

/* hub.c */
int64_t hub_now_ms(void);
int hub_stopping(aw_hub *h);
/* The leader's lease is fresh enough to send. */
int hub_may_send(aw_hub *h);

/* bots.c */
void hub_bot_free(hub_bot *b);
/* A bot of channel ch of a project's active revision pol (copies); NULL
 * when it has no name or memory ran out. */
hub_bot *hub_bot_from(const char *project, const aw_policy *pol, const json_t *ch);
/* The bots of the active channel_event revisions of every project. */
hub_bot *hub_load_bots(aw_hub *h);
/* Caller holds h->mu. */
hub_bot *hub_bot_named(aw_hub *h, const char *project, const char *name);
/* The bot's token, from its tenant's secret reference (wipe *tok). */
aw_err hub_resolve_token(const aw_hub_opts *o, const hub_bot *b, aw_buf *tok, aw_error *err);

/* inbound.c */
void hub_act(const aw_hub_opts *o, const hub_bot *b, pending *p);
/* Mirrors, answers and commits a batch; fenced unless fence is 0 (a
 * webhook's update). */
aw_err hub_commit_batch(const aw_hub_opts *o, const hub_bot *b, int64_t fence, pending *ps, int n,
			int64_t next_offset, aw_error *err);
void hub_poison(const hub_bot *b, pending *p, aw_error *err);

/* poller.c: the thread of a polled bot (arg: the hub_bot). */
void *hub_poll_bot(void *arg);

/* webhook.c: setWebhook for a webhook bot. */
aw_err hub_set_webhook(aw_hub *h, hub_bot *b);

/* feedback.c */
/* How far a run is: its steps, and those its journal says succeeded. */
void hub_steps_done(const aw_run *r, const aw_run_step *st, int n, int *done, int *total);
void hub_feedback(aw_hub *h, const char *project);

/* outbound.c */
/* One outbound row, due now; id (may be NULL) gets its message id. */
aw_err hub_queue(aw_txn *t, const char *bot, const char *chat, const char *method,
		 const char *purpose, const char *text, const json_t *markup, const char *target,
		 const char *run_id, const char *fingerprint, char *id, aw_error *err);
/* Delivers what is due of the project's outbox (the leader's work thread). */
void hub_send_project(aw_hub *h, const char *project);

typedef struct {
	int http;	   /* the HTTP status (0: none) */
	int network;	   /* no answer at all: connect error, timeout */
	int code;	   /* the Bot API's error_code when ok was false */
	int retry_after_s; /* parameters.retry_after of a 429 */
	char description[160];
} tg_status;

/* POSTs params as JSON to <base>/bot<token>/<method> within timeout_s.
 * AW_OK with *result (new reference) when the answer is ok; otherwise
 * AW_E_CHANNEL_UPSTREAM with st filled. stop (may be NULL) true aborts the
 * call within 100 ms (a long poll at shutdown). The URL is never logged. */
aw_err tg_call(const char *base, const char *token, const char *method, const json_t *params,
	       int timeout_s, const atomic_bool *stop, json_t **result, tg_status *st,
	       aw_error *err);

#endif
