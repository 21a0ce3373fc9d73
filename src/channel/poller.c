/*
 * poller.c - one bot's poller thread (the leader runs one per polled bot):
 * takes the bot's fenced offset, long-polls getUpdates, acts on each batch
 * (inbound.c) and commits it with the next offset; a batch fetched again
 * too often without a commit has its first update poisoned.
 */
#include <stdlib.h>
#include <unistd.h>

#include "awooop/alloc.h"
#include "awooop/log.h"
#include "awooop/secret.h"
#include "awooop/store/channel.h"
#include "channel_internal.h"

/* A batch the leader fetched this often at one offset without committing it
 * (its handling crashed the process, or its commit kept failing) is not
 * acted on again: its first update is committed as poisoned. */
#define POISON_TRIES 3

static aw_err count_try(const aw_hub_opts *o, const hub_bot *b, int64_t fence, int64_t offset,
			int *tries, aw_error *err)
{
	aw_ctx ctx;
	aw_ctx_system(&ctx, b->project);
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(o->store, &ctx, AW_TXN_WRITE, &t, err);
	if (!e && (e = aw_store_channel_try(t, b->name, fence, offset, tries, err)))
		aw_store_rollback(t);
	else if (!e)
		e = aw_store_commit(t, err);
	return e;
}

static void bot_nap(hub_bot *b, int ms)
{
	for (int i = 0; i < ms && !atomic_load(&b->stop); i += 50)
		usleep(50000);
}

void *hub_poll_bot(void *arg)
{
	hub_bot *b = arg;
	aw_hub *h = b->hub;
	aw_ctx ctx;
	aw_ctx_system(&ctx, b->project);
	aw_error err = {0};
	int64_t fence = 0, offset = 0;
	aw_buf tok = AW_BUF_INIT(4096);
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(h->o.store, &ctx, AW_TXN_WRITE, &t, &err);
	if (!e && !(e = aw_store_channel_lead(t, b->name, &fence, &offset, &err)))
		e = aw_store_commit(t, &err);
	else if (t)
		aw_store_rollback(t);
	if (!e)
		e = hub_resolve_token(&h->o, b, &tok, &err);
	if (e) {
		aw_log(AW_LOG_ERROR, &ctx, "channel bot not polled", "bot", b->name, "code",
		       aw_err_code(e), "detail", err.msg, NULL);
		aw_secret_wipe(&tok);
		atomic_store(&b->stop, 1); /* the next sync tries again */
		return NULL;
	}
	aw_log(AW_LOG_INFO, &ctx, "channel bot polled by this process", "bot", b->name, NULL);
	int backoff = 200;
	while (!atomic_load(&b->stop) && atomic_load(&h->leader)) {
		json_t *params =
			json_pack("{s:I, s:i, s:i, s:[s, s]}", "offset", (json_int_t)offset,
				  "timeout", h->o.poll_timeout_s, "limit", 100, "allowed_updates",
				  "message", "callback_query");
		json_t *res = NULL;
		tg_status st;
		e = tg_call(h->api, aw_buf_str(&tok), "getUpdates", params,
			    h->o.poll_timeout_s + 10, &b->stop, &res, &st, &err);
		json_decref(params);
		if (e || !json_is_array(res)) {
			json_decref(res);
			if (atomic_load(&b->stop))
				break;
			aw_log(AW_LOG_WARN, &ctx, "getUpdates failed", "bot", b->name, "detail",
			       err.msg, NULL);
			bot_nap(b, st.retry_after_s ? st.retry_after_s * 1000 : backoff);
			backoff = backoff < 5000 ? backoff * 2 : 5000;
			continue;
		}
		backoff = 200;
		size_t n = json_array_size(res);
		pending *ps = aw_calloc(n + 1, sizeof *ps);
		int64_t next = offset;
		int np = 0;
		for (size_t i = 0; ps && i < n; i++) {
			if (aw_tg_update_parse(json_array_get(res, i), &ps[np].u, &err))
				continue;
			if (ps[np].u.update_id + 1 > next)
				next = ps[np].u.update_id + 1;
			if (ps[np].u.update_id < offset) /* an old one: confirmed already */
				continue;
			np++;
		}
		json_decref(res);
		int tries = 0;
		e = np ? count_try(&h->o, b, fence, offset, &tries, &err) : AW_OK;
		if (!e && tries > POISON_TRIES) {
			hub_poison(b, &ps[0], &err);
			np = 1;
			next = ps[0].u.update_id + 1;
		} else {
			for (int i = 0; !e && i < np; i++)
				hub_act(&h->o, b, &ps[i]);
		}
		if (!e && n && ps)
			e = hub_commit_batch(&h->o, b, fence, ps, np, next, &err);
		for (int i = 0; ps && i < np; i++)
			free(ps[i].redacted);
		free(ps);
		if (e == AW_E_CHANNEL_FENCED) {
			aw_log(AW_LOG_WARN, &ctx, "channel bot taken over by another process",
			       "bot", b->name, NULL);
			atomic_store(&b->stop, 1);
			break;
		}
		if (e) {
			aw_log(AW_LOG_WARN, &ctx, "channel batch not committed; fetched again",
			       "bot", b->name, "code", aw_err_code(e), "detail", err.msg, NULL);
			bot_nap(b, 200);
			continue;
		}
		offset = next;
	}
	aw_secret_wipe(&tok);
	return NULL;
}
