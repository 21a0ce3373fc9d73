/*
 * relay.c - the outbox relay loop (see relay.h). One thread does rounds; on
 * PostgreSQL a second thread LISTENs and turns notifications into kicks. A
 * round keeps its claim transaction open only across the publishes of its
 * batch, so row locks are short.
 */
#include "awooop/alloc.h"
#include "awooop/relay.h"
#include "relay_hooks.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "awooop/contract.h"
#include "awooop/crypto.h"
#include "awooop/keys.h"
#include "awooop/log.h"
#include "awooop/metrics.h"

int (*aw_relay_fault_hook)(const char *event_id);

/* ---- process-wide wake-up */
static pthread_mutex_t kick_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t kick_cv; /* waits count on the monotonic clock */
static pthread_once_t kick_once = PTHREAD_ONCE_INIT;

static void kick_init(void)
{
	aw_clock_cond_init(&kick_cv);
}
static unsigned long kick_gen;

void aw_outbox_kick(void)
{
	pthread_once(&kick_once, kick_init);
	pthread_mutex_lock(&kick_mu);
	kick_gen++;
	pthread_cond_broadcast(&kick_cv);
	pthread_mutex_unlock(&kick_mu);
}

struct aw_relay {
	aw_store *s;
	aw_bus *bus;
	aw_relay_opts o;
	pthread_t th, lth;
	int listening;
	atomic_bool stop;
	aw_store_listener *listener;
};

static char *payload_of(const aw_outbox_event *ev)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "event_id", ev->event_id,
			      "event_type", ev->event_type, "project_id", ev->project_id,
			      "contract_family", ev->family, "contract_id", ev->contract_id,
			      "new_revision_id", ev->new_revision_id, "created_at", ev->created_at);
	if (!o)
		return NULL;
	json_object_set_new(o, "old_revision_id",
			    ev->old_revision_id[0] ? json_string(ev->old_revision_id)
						   : json_null());
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

aw_err aw_relay_round(aw_store *s, aw_bus *bus, int batch, int *delivered, aw_error *err)
{
	*delivered = 0;
	aw_txn *t = NULL;
	aw_outbox_event *ev = NULL;
	int n = 0;
	aw_err e = aw_store_relay_begin(s, &t, err);
	if (e)
		return e;
	if ((e = aw_store_relay_claim(t, batch, &ev, &n, err)))
		goto abort;
	for (int i = 0; i < n; i++) {
		char channel[160];
		char *payload = payload_of(&ev[i]);
		if (!payload ||
		    aw_keys_invalidate_channel(ev[i].project_id, channel, sizeof channel)) {
			free(payload);
			e = aw_fail(err, AW_E_INTERNAL, "cannot build the event for %s",
				    ev[i].event_id);
			goto abort;
		}
		int64_t t0 = aw_clock_mono_ns();
		aw_err pe = aw_bus_publish(bus, channel, payload, err);
		aw_metrics_relay_publish((double)(aw_clock_mono_ns() - t0) / 1e9, pe == AW_OK);
		free(payload);
		if (pe) { /* count the attempt, keep the event, stop this round */
			aw_error ignore;
			aw_store_relay_done(t, ev[i].event_id, 0, &ignore);
			e = pe;
			break;
		}
		if (aw_relay_fault_hook && aw_relay_fault_hook(ev[i].event_id)) {
			e = aw_fail(err, AW_E_INTERNAL, "fault injected after publish");
			goto abort;
		}
		if ((e = aw_store_relay_done(t, ev[i].event_id, 1, err)))
			goto abort;
		(*delivered)++;
	}
	free(ev);
	{
		aw_error cerr;
		aw_err ce = aw_store_commit(t, &cerr);
		if (ce) {
			*delivered = 0;
			if (err)
				*err = cerr;
			return ce;
		}
	}
	return e;
abort:
	free(ev);
	aw_store_rollback(t);
	*delivered = 0;
	return e;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static int jitter(int ms)
{
	uint32_t j = 0;
	aw_random_bytes(&j, sizeof j);
	return ms / 2 + (int)(j % (uint32_t)(ms / 2 + 1));
}

static void update_backlog(aw_relay *r)
{
	int64_t n = 0, oldest_ms = 0;
	char oldest[AW_TS_LEN + 1] = "";
	aw_error err;
	if (aw_store_relay_stats(r->s, &n, oldest, &err) != AW_OK)
		return;
	double age = 0;
	if (oldest[0] && aw_clock_parse(oldest, &oldest_ms) == 0)
		age = (double)(aw_clock_wall_ms() - oldest_ms) / 1000.0;
	aw_metrics_outbox_backlog((double)n, age);
}

static void *relay_main(void *arg)
{
	aw_relay *r = arg;
	int backoff = 100;
	int64_t next_prune = AW_MONO_NEVER, next_stats = AW_MONO_NEVER; /* due at once */
	aw_log(AW_LOG_INFO, NULL, "relay started", "bus", aw_bus_kind(r->bus), NULL);
	while (!r->stop) {
		pthread_mutex_lock(&kick_mu);
		unsigned long gen = kick_gen;
		pthread_mutex_unlock(&kick_mu);
		int delivered = 0;
		aw_error err = {0};
		aw_err e = aw_relay_round(r->s, r->bus, r->o.batch, &delivered, &err);
		int64_t now = aw_clock_mono_ns();
		if (now >= next_stats) {
			update_backlog(r);
			next_stats = now + 1000000000LL;
		}
		if (e) {
			aw_log(AW_LOG_WARN, NULL, "relay round failed; backing off", "code",
			       aw_err_code(e), "detail", err.msg, NULL);
			sleep_ms(jitter(backoff));
			backoff = backoff * 2 > r->o.backoff_max_ms ? r->o.backoff_max_ms
								    : backoff * 2;
			continue;
		}
		backoff = 100;
		aw_metrics_loop_tick("relay");
		if (now >= next_prune) {
			char before[AW_TS_LEN + 1];
			aw_clock_format(aw_clock_wall_ms() - (int64_t)r->o.retention_s * 1000,
					before);
			int64_t pruned = 0;
			if (aw_store_relay_prune(r->s, before, &pruned, &err) == AW_OK && pruned) {
				char np[24];
				snprintf(np, sizeof np, "%lld", (long long)pruned);
				aw_log(AW_LOG_INFO, NULL, "relay pruned delivered events", "count",
				       np, NULL);
			}
			next_prune = now + 60000000000LL;
		}
		if (delivered == r->o.batch)
			continue; /* more may be waiting */
		struct timespec until = aw_clock_after(CLOCK_MONOTONIC, r->o.poll_ms);
		pthread_once(&kick_once, kick_init);
		pthread_mutex_lock(&kick_mu);
		while (!r->stop && kick_gen == gen)
			if (pthread_cond_timedwait(&kick_cv, &kick_mu, &until))
				break;
		pthread_mutex_unlock(&kick_mu);
	}
	aw_log(AW_LOG_INFO, NULL, "relay stopped", NULL);
	return NULL;
}

static void *listen_main(void *arg)
{
	aw_relay *r = arg;
	while (!r->stop)
		if (aw_store_listener_wait(r->listener, 200) > 0)
			aw_outbox_kick();
	return NULL;
}

aw_err aw_relay_start(aw_store *s, aw_bus *bus, const aw_relay_opts *opts, aw_relay **out,
		      aw_error *err)
{
	aw_relay *r = aw_calloc(1, sizeof *r);
	if (!r)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	aw_contract_on_change(aw_outbox_kick); /* activations here: delivered at once */
	r->s = s;
	r->bus = bus;
	if (opts)
		r->o = *opts;
	if (r->o.batch <= 0)
		r->o.batch = 100;
	if (r->o.poll_ms <= 0)
		r->o.poll_ms = 1000;
	if (r->o.retention_s <= 0)
		r->o.retention_s = 7 * 86400;
	if (r->o.backoff_max_ms <= 0)
		r->o.backoff_max_ms = 5000;
	r->listener = aw_store_listen(s, "awooop_outbox", 0);
	if (r->listener && pthread_create(&r->lth, NULL, listen_main, r) == 0)
		r->listening = 1;
	if (pthread_create(&r->th, NULL, relay_main, r) != 0) {
		r->stop = 1;
		if (r->listening)
			pthread_join(r->lth, NULL);
		aw_store_listener_close(r->listener);
		free(r);
		return aw_fail(err, AW_E_INTERNAL, "cannot start the relay thread");
	}
	*out = r;
	return AW_OK;
}

void aw_relay_stop(aw_relay *r)
{
	if (!r)
		return;
	r->stop = 1;
	aw_outbox_kick();
	pthread_join(r->th, NULL);
	if (r->listening)
		pthread_join(r->lth, NULL);
	aw_store_listener_close(r->listener);
	free(r);
}
