/*
 * hub.c - the channel hub (channel.h): its life, leadership, and the worker
 * that gives runs their feedback and delivers the outbox.
 *
 * Threads: lead() takes and renews the lease and, while it holds it, keeps
 * the set of bots in step with the active channel_event revisions (a poller
 * thread per bot, poller.c; or a webhook, webhook.c); work() ticks the
 * progressive feedback (feedback.c) and the sender (outbound.c).
 * Sending is allowed only while the lease is fresh (renewed within the
 * first third of its life), so an old leader has stopped before a new one
 * can start: one sender at a time, which is what makes the per-chat and
 * per-bot rates hold across processes.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "awooop/alloc.h"
#include "awooop/clock.h"
#include "awooop/crypto.h"
#include "awooop/kv.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/str.h"
#include "channel_internal.h"

int64_t hub_now_ms(void)
{
	return aw_clock_mono_ns() / 1000000;
}

static void nap(aw_hub *h, int ms)
{
	struct timespec ts = aw_clock_after(CLOCK_MONOTONIC, ms);
	pthread_mutex_lock(&h->mu);
	if (!h->stopping)
		pthread_cond_timedwait(&h->cv, &h->mu, &ts);
	pthread_mutex_unlock(&h->mu);
}

int hub_stopping(aw_hub *h)
{
	pthread_mutex_lock(&h->mu);
	int s = h->stopping;
	pthread_mutex_unlock(&h->mu);
	return s;
}

int hub_may_send(aw_hub *h)
{
	return atomic_load(&h->leader) && aw_clock_mono_ns() < atomic_load(&h->send_until_ns);
}

/* ---- leadership ---- */

static void stop_bot(hub_bot *b)
{
	atomic_store(&b->stop, 1);
	if (b->started)
		pthread_join(b->th, NULL);
	b->started = 0;
}

/* Brings the pollers in step with the contracts (leader) or stops them. */
static void sync_bots(aw_hub *h, int lead)
{
	hub_bot *want = lead ? hub_load_bots(h) : NULL;
	hub_bot *stale = NULL, *keep = NULL;
	/* one swap under the lock: the sender never sees a bot missing that stays
	 * (it reads the list under the same lock) */
	pthread_mutex_lock(&h->mu);
	for (hub_bot *b = h->bots, *next; b; b = next) {
		next = b->next;
		hub_bot *w;
		for (w = want; w; w = w->next) /* running and unchanged: it stays */
			if (!strcmp(w->project, b->project) && !strcmp(w->name, b->name) &&
			    !strcmp(w->hash, b->hash))
				break;
		if (w && b->active && !atomic_load(&b->stop)) {
			snprintf(w->hash, sizeof w->hash, "taken");
			b->next = keep;
			keep = b;
		} else {
			b->next = stale;
			stale = b;
		}
	}
	while (want) {
		hub_bot *w = want;
		want = w->next;
		if (!strcmp(w->hash, "taken")) {
			hub_bot_free(w);
			continue;
		}
		w->next = keep;
		keep = w;
		w->active = -1; /* to be started below */
	}
	h->bots = keep;
	pthread_mutex_unlock(&h->mu);
	/* outside the lock: thread joins and Bot API calls */
	while (stale) {
		hub_bot *b = stale;
		stale = b->next;
		stop_bot(b);
		pthread_mutex_lock(&h->mu);
		b->next = h->graveyard;
		h->graveyard = b;
		pthread_mutex_unlock(&h->mu);
	}
	for (hub_bot *w = keep; w; w = w->next) {
		if (w->active != -1)
			continue;
		if (w->webhook)
			w->active = hub_set_webhook(h, w) == AW_OK;
		else
			w->active = w->started = pthread_create(&w->th, NULL, hub_poll_bot, w) == 0;
	}
}

static void *lead(void *arg)
{
	aw_hub *h = arg;
	aw_ctx plat;
	aw_ctx_system(&plat, AW_PLATFORM_PROJECT);
	int period = h->o.lease_ms / 3;
	while (!hub_stopping(h)) {
		int held = 1;
		aw_error err = {0};
		int64_t t0 = aw_clock_mono_ns();
		if (h->o.kv && aw_kv_lease(h->o.kv, &plat, "telegram_polling_leader", NULL, 0,
					   h->holder, h->o.lease_ms, 0, &held, &err))
			held = 0; /* Redis unreachable: not sure we lead, so we do not */
		if (held)	  /* stop sending a third of the lease before it could lapse */
			atomic_store(&h->send_until_ns,
				     t0 + (int64_t)(h->o.lease_ms - period) * 1000000);
		int was = atomic_exchange(&h->leader, held);
		if (was != held) {
			aw_log(AW_LOG_INFO, NULL,
			       held ? "channel hub leader: this process polls and sends"
				    : "channel hub: not the leader",
			       "holder", h->holder, NULL);
			aw_metrics_channel_leader(held);
		}
		sync_bots(h, held);
		aw_metrics_loop_tick("channel_lead");
		nap(h, period);
	}
	atomic_store(&h->leader, 0);
	sync_bots(h, 0);
	if (h->o.kv) { /* hand over at once */
		int held = 0;
		aw_error err = {0};
		aw_kv_lease(h->o.kv, &plat, "telegram_polling_leader", NULL, 0, h->holder,
			    h->o.lease_ms, 1, &held, &err);
	}
	return NULL;
}

/* ---- the worker ---- */

static void *work(void *arg)
{
	aw_hub *h = arg;
	int64_t last_feedback = 0;
	while (!hub_stopping(h)) {
		if (!hub_may_send(h)) {
			nap(h, h->o.tick_ms);
			continue;
		}
		/* the projects with bots (a snapshot of names) */
		char projects[64][AW_PROJECT_MAX + 1];
		int np = 0;
		pthread_mutex_lock(&h->mu);
		for (hub_bot *b = h->bots; b && np < 64; b = b->next) {
			int seen = 0;
			for (int i = 0; i < np; i++)
				seen |= !strcmp(projects[i], b->project);
			if (!seen)
				AW_COPY_ARRAY(projects[np++], b->project);
		}
		pthread_mutex_unlock(&h->mu);
		int feedback = hub_now_ms() - last_feedback >= 250;
		for (int i = 0; feedback && i < np; i++)
			hub_feedback(h, projects[i]);
		if (feedback)
			last_feedback = hub_now_ms();
		for (int i = 0; i < np; i++)
			hub_send_project(h, projects[i]);
		aw_metrics_loop_tick("channel_work");
		nap(h, h->o.tick_ms);
	}
	return NULL;
}

/* ---- life ---- */

/* The lead and work threads end at their next look (their naps wake). */
static void stop_threads(aw_hub *h)
{
	pthread_mutex_lock(&h->mu);
	h->stopping = 1;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

/* Frees a hub whose threads have ended (or never started). */
static void hub_free(aw_hub *h)
{
	json_decref(h->edits);
	json_decref(h->sent_fp);
	while (h->graveyard) {
		hub_bot *b = h->graveyard;
		h->graveyard = b->next;
		hub_bot_free(b);
	}
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	free(h);
}

aw_err aw_hub_start(const aw_hub_opts *o, aw_hub **out, aw_error *err)
{
	aw_hub *h = aw_calloc(1, sizeof *h);
	if (!h || !(h->edits = json_object()) || !(h->sent_fp = json_object())) {
		if (h)
			json_decref(h->edits);
		free(h);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	h->o = *o;
	/* URLs to connect to and a contract id: whole, or refused */
	if (AW_STR_COPY(h->api, o->api_base ? o->api_base : "https://api.telegram.org") < 0 ||
	    AW_STR_COPY(h->contract, o->contract_id ? o->contract_id : "default") < 0 ||
	    AW_STR_COPY(h->webhook_base, o->webhook_base) < 0) {
		json_decref(h->edits);
		json_decref(h->sent_fp);
		free(h);
		return aw_fail(
			err, AW_E_CONFIG,
			"the Telegram API base, webhook base or channel contract id is too long");
	}
	h->o.poll_timeout_s = o->poll_timeout_s > 0 ? o->poll_timeout_s : 25;
	h->o.lease_ms = o->lease_ms > 0 ? o->lease_ms : 10000;
	h->o.tick_ms = o->tick_ms > 0 ? o->tick_ms : 100;
	h->o.per_chat_ms = o->per_chat_ms > 0 ? o->per_chat_ms : 1000;
	h->o.per_bot_per_s = o->per_bot_per_s > 0 && o->per_bot_per_s <= 64 ? o->per_bot_per_s : 30;
	char host[64] = "host";
	gethostname(host, sizeof host - 1);
	char rnd[9];
	uint8_t r[4];
	aw_random_bytes(r, sizeof r);
	aw_hex(r, sizeof r, rnd);
	snprintf(h->holder, sizeof h->holder, "%.40s-%d-%s", host, (int)getpid(), rnd);
	pthread_mutex_init(&h->mu, NULL);
	aw_clock_cond_init(&h->cv);
	if (pthread_create(&h->lead_th, NULL, lead, h)) {
		hub_free(h);
		return aw_fail(err, AW_E_INTERNAL, "cannot start the channel hub");
	}
	if (pthread_create(&h->work_th, NULL, work, h)) {
		stop_threads(h);
		pthread_join(h->lead_th, NULL);
		hub_free(h);
		return aw_fail(err, AW_E_INTERNAL, "cannot start the channel hub");
	}
	*out = h;
	return AW_OK;
}

void aw_hub_stop(aw_hub *h)
{
	if (!h)
		return;
	atomic_store(&h->quit, 1); /* a send to a stalled Bot API aborts (retried later) */
	stop_threads(h);
	pthread_join(h->work_th, NULL);
	pthread_join(h->lead_th, NULL);
	hub_free(h);
}
