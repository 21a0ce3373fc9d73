/*
 * hub.c - the channel hub (channel.h): leadership, one poller per bot, and
 * the worker that gives runs their feedback and delivers the outbox.
 *
 * Threads: lead() takes and renews the lease and, while it holds it, keeps
 * the set of bots in step with the active channel_event revisions (a poller
 * thread per bot); work() ticks the progressive feedback and the sender.
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
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "awooop/approval.h"
#include "awooop/audit.h"
#include "awooop/buf.h"
#include "awooop/channel.h"
#include "awooop/clock.h"
#include "awooop/crypto.h"
#include "awooop/keys.h"
#include "awooop/kv.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/pattern.h"
#include "awooop/policy.h"
#include "awooop/redact.h"
#include "awooop/run.h"
#include "awooop/secret.h"
#include "awooop/store/channel.h"
#include "awooop/tenancy.h"
#include "channel_internal.h"

#define MAX_CHATS 4096
/* the rates are kept with this margin: Telegram counts arrivals, and two
 * requests sent 1000 ms apart may arrive 995 ms apart */
#define JITTER_MS 50

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

static int64_t now_ms(void)
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

static int stopping(aw_hub *h)
{
	pthread_mutex_lock(&h->mu);
	int s = h->stopping;
	pthread_mutex_unlock(&h->mu);
	return s;
}

static int may_send(aw_hub *h)
{
	return atomic_load(&h->leader) && aw_clock_mono_ns() < atomic_load(&h->send_until_ns);
}

/* ---- outbound rows ---- */

/* One outbound row, due now; id (may be NULL) gets its message id. */
static aw_err queue(aw_txn *t, const char *bot, const char *chat, const char *method,
		    const char *purpose, const char *text, const json_t *markup, const char *target,
		    const char *run_id, const char *fingerprint, char *id, aw_error *err)
{
	aw_outbound m = {0};
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	aw_uuid7_str(m.msg_id);
	snprintf(m.bot, sizeof m.bot, "%s", bot);
	snprintf(m.chat_id, sizeof m.chat_id, "%s", chat);
	snprintf(m.method, sizeof m.method, "%s", method);
	snprintf(m.purpose, sizeof m.purpose, "%s", purpose);
	m.text = (char *)text;
	m.markup = markup ? json_dumps(markup, JSON_COMPACT) : NULL;
	snprintf(m.target_id, sizeof m.target_id, "%s", target ? target : "");
	snprintf(m.run_id, sizeof m.run_id, "%s", run_id ? run_id : "");
	snprintf(m.fingerprint, sizeof m.fingerprint, "%s", fingerprint ? fingerprint : "");
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
	e = queue(t, bot, chat_id, "send", "notify", text, NULL, NULL, NULL, fingerprint, id, err);
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

/* ---- configuration ---- */

static void bot_free(hub_bot *b)
{
	for (size_t i = 0; b->match && i < json_array_size(json_object_get(b->channel, "rules"));
	     i++)
		aw_pattern_free(b->match[i]);
	free(b->match);
	json_decref(b->channel);
	json_decref(b->templates);
	json_decref(b->silences);
	free(b);
}

/* A bot of channel ch of a project's active revision pol (copies). */
static hub_bot *bot_from(const char *project, const aw_policy *pol, const json_t *ch)
{
	const char *name = json_string_value(json_object_get(json_object_get(ch, "bot"), "name"));
	json_t *interval = json_object_get(pol->body, "progress_interval_s");
	hub_bot *b = name ? calloc(1, sizeof *b) : NULL;
	if (!b)
		return NULL;
	snprintf(b->project, sizeof b->project, "%s", project);
	snprintf(b->name, sizeof b->name, "%s", name);
	b->channel = json_deep_copy(ch);
	b->templates = json_deep_copy(json_object_get(pol->body, "templates"));
	b->silences = json_deep_copy(json_object_get(pol->body, "silences"));
	b->interval_s = json_is_integer(interval) ? (int)json_integer_value(interval) : 30;
	b->webhook = !strcmp(json_string_value(json_object_get(ch, "mode")) ?: "", "webhook");
	/* the rules' patterns, compiled once per revision, not per message */
	json_t *rules = json_object_get(b->channel, "rules");
	b->match = calloc(json_array_size(rules) + 1, sizeof *b->match);
	size_t ri;
	json_t *r;
	json_array_foreach (rules, ri, r) {
		const char *m = json_string_value(json_object_get(r, "match"));
		aw_error perr = {0};
		if (m && b->match)
			aw_pattern_compile(m, &b->match[ri], &perr);
	}
	char *text = json_dumps(ch, JSON_COMPACT | JSON_SORT_KEYS);
	aw_buf hb = AW_BUF_INIT(1u << 20);
	aw_buf_addf(&hb, "%s|%s|%d", pol->revision_id, text ? text : "", b->interval_s);
	aw_sha256_hex(aw_buf_str(&hb), hb.len, b->hash);
	aw_buf_free(&hb);
	free(text);
	return b;
}

/* The bots of the active channel_event revisions of every project. */
static hub_bot *load_bots(aw_hub *h)
{
	hub_bot *list = NULL;
	aw_ctx sys;
	aw_ctx_system(&sys, NULL);
	char after[AW_PROJECT_MAX + 1] = "";
	for (;;) {
		aw_project *ps = NULL;
		int np = 0;
		aw_error err = {0};
		if (aw_project_list(h->o.store, &sys, after[0] ? after : NULL, 100, &ps, &np,
				    &err) ||
		    np == 0) {
			free(ps);
			break;
		}
		for (int i = 0; i < np; i++) {
			aw_ctx pc;
			aw_ctx_system(&pc, ps[i].project_id);
			aw_policy pol;
			if (aw_policy_effective(h->o.policy, &pc, "channel_event", h->contract,
						&pol, &err))
				continue;
			size_t k;
			json_t *ch;
			json_array_foreach (json_object_get(pol.body, "channels"), k, ch) {
				json_t *bt = json_object_get(ch, "bot");
				const char *name = json_string_value(json_object_get(bt, "name"));
				if (!name)
					continue;
				hub_bot *b = bot_from(ps[i].project_id, &pol, ch);
				if (!b)
					break;
				b->hub = h;
				b->next = list;
				list = b;
			}
			aw_policy_release(&pol);
		}
		snprintf(after, sizeof after, "%s", ps[np - 1].project_id);
		free(ps);
		if (np < 100)
			break;
	}
	return list;
}

/* ---- inbound ---- */

static const char *principal_of(const hub_bot *b, const char *user_id)
{
	size_t i;
	json_t *u;
	json_array_foreach (json_object_get(b->channel, "users"), i, u)
		if (!strcmp(json_string_value(json_object_get(u, "user_id")) ?: "", user_id))
			return json_string_value(json_object_get(u, "principal"));
	return NULL;
}

static int chat_served(const hub_bot *b, const char *chat_id)
{
	size_t i;
	json_t *c;
	json_array_foreach (json_object_get(b->channel, "chats"), i, c)
		if (!strcmp(json_string_value(json_object_get(c, "chat_id")) ?: "", chat_id))
			return 1;
	return 0;
}

/* Rule i's pattern (checked when its revision was written, compiled in
 * bot_from) against a message: bounded whatever either holds (pattern.h). */
static int matches(const hub_bot *b, size_t i, const char *text)
{
	const aw_pattern *re = b->match ? b->match[i] : NULL;
	if (!re)
		return 0;
	int ok = aw_pattern_match(re, text, strlen(text));
	if (ok < 0) {
		aw_ctx ctx;
		aw_ctx_system(&ctx, b->project);
		aw_log(AW_LOG_WARN, &ctx, "a rule's pattern hit its match limit: no match", "bot",
		       b->name, NULL);
	}
	return ok == 1;
}

/* The rule a message or command triggers, or NULL. */
static const json_t *rule_for(const hub_bot *b, const aw_tg_update *u)
{
	size_t i;
	json_t *r;
	json_array_foreach (json_object_get(b->channel, "rules"), i, r) {
		const char *ev = json_string_value(json_object_get(r, "event"));
		const char *cmd = json_string_value(json_object_get(r, "command"));
		const char *m = json_string_value(json_object_get(r, "match"));
		if (!strcmp(u->kind, "command") && ev && !strcmp(ev, "command") && cmd) {
			size_t n = strlen(cmd);
			if (!strncmp(u->text, cmd, n) &&
			    (u->text[n] == 0 || u->text[n] == ' ' || u->text[n] == '@'))
				return r;
		} else if (!strcmp(u->kind, "message") && ev && !strcmp(ev, "message") &&
			   (!m || matches(b, i, u->text))) {
			return r;
		}
	}
	return NULL;
}

static void short_id(const char *run_id, char out[9])
{
	snprintf(out, 9, "%.8s", run_id);
}

/* How far a run is: its steps, and those its journal says succeeded. */
static void steps_done(const aw_run *r, const aw_run_step *st, int n, int *done, int *total)
{
	json_t *wf = json_loads(r->workflow, 0, NULL);
	*total = (int)json_array_size(wf);
	json_decref(wf);
	*done = 0;
	for (int i = 0; i < n; i++)
		*done += !strcmp(st[i].state, "succeeded");
}

/* "/status RUN": the run's state, from the run runtime. */
static void status_text(const aw_hub_opts *o, const aw_ctx *ctx, const char *arg, char *out,
			size_t cap)
{
	while (*arg == ' ')
		arg++;
	aw_run r;
	aw_run_step *st = NULL;
	int n = 0;
	aw_error err = {0};
	if (!aw_uuid_valid(arg) || aw_run_get(o->store, ctx, arg, &r, &st, &n, &err) != AW_OK) {
		snprintf(out, cap, "No run %.40s in this project. Usage: /status RUN_ID", arg);
		return;
	}
	int done, total;
	steps_done(&r, st, n, &done, &total);
	snprintf(out, cap, "Run %s: %s, %d of %d steps done%s%s", r.run_id, r.state, done, total,
		 r.error_code[0] ? ", error " : "", r.error_code);
	aw_run_free(&r);
	aw_run_steps_free(st, n);
}

/* Starts the template's run for an update (idempotent by update id). */
static aw_err start_run(const aw_hub_opts *o, const hub_bot *b, const aw_ctx *ctx,
			const json_t *rule, const aw_tg_update *u, char run_id[AW_UUID_STR_LEN + 1],
			aw_error *err)
{
	const char *tname = json_string_value(json_object_get(rule, "run_template"));
	json_t *tpl = json_object_get(b->templates, tname ? tname : "");
	if (!json_is_object(tpl))
		return aw_fail(err, AW_E_CHANNEL_UNKNOWN, "the channel has no run template %s",
			       tname ? tname : "");
	json_t *body = json_pack("{s:O, s:{s:s, s:s, s:s, s:I, s:s}}", "workflow",
				 json_object_get(tpl, "workflow"), "input", "text", u->text,
				 "chat_id", u->chat_id, "user_id", u->user_id, "update_id",
				 (json_int_t)u->update_id, "bot", b->name);
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!text)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	aw_run_request req;
	aw_err e = aw_run_request_decode(text, strlen(text), &req, err);
	free(text);
	if (e)
		return e;
	char key[96];
	snprintf(key, sizeof key, "tg/%s/%lld", b->name, (long long)u->update_id);
	aw_run run;
	int replayed = 0;
	e = aw_run_submit(o->store, ctx, &req, key, &run, &replayed, err);
	aw_run_request_free(&req);
	if (!e) {
		memcpy(run_id, run.run_id, AW_UUID_STR_LEN + 1);
		aw_run_free(&run);
	}
	return e;
}

typedef struct {
	aw_tg_update u;
	aw_conv_event ev;
	char reply[512];  /* a reply to the chat, or "" */
	char answer[200]; /* an answerCallbackQuery text, or "" */
	char *redacted;
} pending;

/* Decides what an update does; the runs and decisions it causes happen here
 * (each idempotent: a re-fetched update finds them done), its rows in the
 * batch transaction. */
/* The update's mirror row (its text redacted), with action. */
static void mirror_of(const char *project, pending *p, const char *action)
{
	aw_tg_update *u = &p->u;
	aw_conv_event *ev = &p->ev;
	ev->update_id = u->update_id;
	snprintf(ev->kind, sizeof ev->kind, "%s", u->kind);
	memcpy(ev->chat_id, u->chat_id, sizeof ev->chat_id);
	memcpy(ev->user_id, u->user_id, sizeof ev->user_id);
	p->redacted = aw_redact_str_for(project, u->text);
	ev->text = p->redacted ? p->redacted : "";
	snprintf(ev->action, sizeof ev->action, "%s", action);
}

static void act(const aw_hub_opts *o, const hub_bot *b, pending *p)
{
	aw_tg_update *u = &p->u;
	aw_conv_event *ev = &p->ev;
	mirror_of(b->project, p, "ignored");
	if (!u->chat_id[0] || !chat_served(b, u->chat_id) || !strcmp(u->kind, "other"))
		return;
	const char *who = principal_of(b, u->user_id);
	aw_ctx ctx;
	aw_ctx_system(&ctx, b->project);
	if (who)
		snprintf(ctx.principal, sizeof ctx.principal, "%s", who);
	else
		snprintf(ctx.principal, sizeof ctx.principal, "telegram-%.40s", u->user_id);
	aw_error err = {0};
	if (!strcmp(u->kind, "callback")) {
		char run[AW_UUID_STR_LEN + 1] = "";
		char d = 0;
		snprintf(ev->action, sizeof ev->action, "approval");
		if (strlen(u->text) == 3 + AW_UUID_STR_LEN + 2 && !strncmp(u->text, "ap:", 3) &&
		    u->text[3 + AW_UUID_STR_LEN] == ':') {
			memcpy(run, u->text + 3, AW_UUID_STR_LEN);
			d = u->text[3 + AW_UUID_STR_LEN + 1];
		}
		if (!aw_uuid_valid(run) || (d != 'a' && d != 'd')) {
			snprintf(p->answer, sizeof p->answer, "Unknown button.");
		} else if (!who || !o->approvals) {
			snprintf(p->answer, sizeof p->answer,
				 "Your Telegram account is not an approver here.");
		} else {
			aw_approval_decision dec = {.run_id = run,
						    .principal = who,
						    .decision = d == 'a' ? "approve" : "deny",
						    .via = "telegram"};
			json_t *out = NULL;
			aw_err e = aw_approvals_decide(o->approvals, &ctx, &dec, &out, &err);
			if (e)
				snprintf(p->answer, sizeof p->answer, "%s: %.150s", aw_err_code(e),
					 err.msg);
			else
				snprintf(p->answer, sizeof p->answer, "%s recorded (%lld of %lld).",
					 d == 'a' ? "Approval" : "Denial",
					 (long long)json_integer_value(
						 json_object_get(out, "approvals")),
					 (long long)json_integer_value(
						 json_object_get(out, "threshold")));
			json_decref(out);
			memcpy(ev->run_id, run, sizeof run);
		}
		return;
	}
	if (!strcmp(u->kind, "command") && !strncmp(u->text, "/status", 7) &&
	    (u->text[7] == ' ' || u->text[7] == 0)) {
		snprintf(ev->action, sizeof ev->action, "status");
		status_text(o, &ctx, u->text + 7, p->reply, sizeof p->reply);
		return;
	}
	const json_t *rule = rule_for(b, u);
	if (!rule)
		return;
	aw_err e = start_run(o, b, &ctx, rule, u, ev->run_id, &err);
	if (e) {
		snprintf(ev->action, sizeof ev->action, "refused");
		snprintf(p->reply, sizeof p->reply, "Could not start the run: %s %.200s",
			 aw_err_code(e), err.msg);
		return;
	}
	snprintf(ev->action, sizeof ev->action, "run");
}

/* Mirrors, answers and commits a batch, fenced. */
static aw_err commit_batch(const aw_hub_opts *o, const hub_bot *b, int64_t fence, pending *ps,
			   int n, int64_t next_offset, aw_error *err)
{
	aw_ctx ctx;
	aw_ctx_system(&ctx, b->project);
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(o->store, &ctx, AW_TXN_WRITE, &t, err);
	if (e)
		return e;
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	for (int i = 0; i < n && !e; i++) {
		pending *p = &ps[i];
		int fresh = 0;
		if ((e = aw_store_conv_event_put(t, b->name, &p->ev, now, &fresh, err)) || !fresh)
			continue; /* mirrored before: its effects were committed with it */
		if (p->reply[0])
			e = queue(t, b->name, p->u.chat_id, "send", "reply", p->reply, NULL, NULL,
				  NULL, NULL, NULL, err);
		if (!e && p->answer[0])
			e = queue(t, b->name, p->u.chat_id, "answer", "answer", p->answer, NULL,
				  p->u.callback_id, p->ev.run_id, NULL, NULL, err);
		if (!e && !strcmp(p->ev.action, "run"))
			e = aw_store_conv_run_put(t, p->ev.run_id, b->name, p->u.chat_id, err);
		char target[96];
		snprintf(target, sizeof target, "tg/%s/%lld", b->name, (long long)p->u.update_id);
		json_t *pl = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s?}", "kind", p->ev.kind,
				       "chat_id", p->ev.chat_id, "user_id", p->ev.user_id, "text",
				       p->ev.text, "action", p->ev.action, "run_id",
				       p->ev.run_id[0] ? p->ev.run_id : NULL);
		if (!e)
			e = aw_audit_record(t, &ctx, "channel.inbound", target, pl, err);
		json_decref(pl);
	}
	if (!e && fence) /* a webhook update has no offset: its mirror row dedups */
		e = aw_store_channel_commit(t, b->name, fence, next_offset, err);
	if (e) {
		aw_store_rollback(t);
		return e;
	}
	if ((e = aw_store_commit(t, err)))
		return e;
	for (int i = 0; i < n; i++)
		aw_metrics_channel(b->project, "in", ps[i].ev.action);
	return AW_OK;
}

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

/* Mirrors p as poisoned: recorded (its text redacted, as any), audited with
 * the batch, never acted on. */
static void poison(const hub_bot *b, pending *p, aw_error *err)
{
	aw_ctx ctx;
	aw_ctx_system(&ctx, b->project);
	char id[24];
	snprintf(id, sizeof id, "%lld", (long long)p->u.update_id);
	aw_log(AW_LOG_ERROR, &ctx, "channel update poisoned: skipped after repeated failures",
	       "bot", b->name, "update_id", id, "detail",
	       err->msg[0] ? err->msg : "the batch was fetched again without a commit", NULL);
	mirror_of(b->project, p, "poisoned");
}

static aw_err resolve_token(const aw_hub_opts *o, const hub_bot *b, aw_buf *tok, aw_error *err)
{
	const char *ref =
		json_string_value(json_object_get(json_object_get(b->channel, "bot"), "token"));
	if (!ref)
		return aw_fail(err, AW_E_CHANNEL_UNKNOWN, "the bot has no token reference");
	return aw_secret_tenant_resolve(b->project, o->secrets_dir, ref, tok, err);
}

static void bot_nap(hub_bot *b, int ms)
{
	for (int i = 0; i < ms && !atomic_load(&b->stop); i += 50)
		usleep(50000);
}

static void *poll_bot(void *arg)
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
		e = resolve_token(&h->o, b, &tok, &err);
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
		aw_tg_status st;
		e = aw_tg_call(h->api, aw_buf_str(&tok), "getUpdates", params,
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
		pending *ps = calloc(n + 1, sizeof *ps);
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
			poison(b, &ps[0], &err);
			np = 1;
			next = ps[0].u.update_id + 1;
		} else {
			for (int i = 0; !e && i < np; i++)
				act(&h->o, b, &ps[i]);
		}
		if (!e && n && ps)
			e = commit_batch(&h->o, b, fence, ps, np, next, &err);
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

/* ---- leadership ---- */

static void stop_bot(hub_bot *b)
{
	atomic_store(&b->stop, 1);
	if (b->started)
		pthread_join(b->th, NULL);
	b->started = 0;
}

/* setWebhook for a webhook bot: Telegram posts its updates to
 * <--channel-webhook-url>/v1/channels/telegram/<project>/<bot> with the
 * bot's secret token, which the API checks. */
static aw_err set_webhook(aw_hub *h, hub_bot *b)
{
	aw_ctx ctx;
	aw_ctx_system(&ctx, b->project);
	aw_error err = {0};
	aw_buf tok = AW_BUF_INIT(4096), sec = AW_BUF_INIT(4096), url = AW_BUF_INIT(2048);
	const char *ref = json_string_value(json_object_get(b->channel, "webhook_secret"));
	aw_err e = AW_OK;
	if (!h->webhook_base[0])
		e = aw_fail(&err, AW_E_CONFIG, "a webhook bot needs --channel-webhook-url");
	else if (!(e = resolve_token(&h->o, b, &tok, &err)) &&
		 !(e = aw_secret_tenant_resolve(b->project, h->o.secrets_dir, ref ? ref : "", &sec,
						&err))) {
		aw_buf_addf(&url, "%s/v1/channels/telegram/%s/%s", h->webhook_base, b->project,
			    b->name);
		json_t *p =
			json_pack("{s:s, s:s, s:[s, s]}", "url", aw_buf_str(&url), "secret_token",
				  aw_buf_str(&sec), "allowed_updates", "message", "callback_query");
		json_t *res = NULL;
		aw_tg_status st;
		e = aw_tg_call(h->api, aw_buf_str(&tok), "setWebhook", p, 15, &h->quit, &res, &st,
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

/* Brings the pollers in step with the contracts (leader) or stops them. */
static void sync_bots(aw_hub *h, int lead)
{
	hub_bot *want = lead ? load_bots(h) : NULL;
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
			bot_free(w);
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
			w->active = set_webhook(h, w) == AW_OK;
		else
			w->active = w->started = pthread_create(&w->th, NULL, poll_bot, w) == 0;
	}
}

static void *lead(void *arg)
{
	aw_hub *h = arg;
	aw_ctx plat;
	aw_ctx_system(&plat, AW_PLATFORM_PROJECT);
	int period = h->o.lease_ms / 3;
	while (!stopping(h)) {
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

/* ---- feedback ---- */

static void progress_text(const aw_run *r, int done, int total, char *out, size_t cap)
{
	char sid[9];
	short_id(r->run_id, sid);
	aw_run_state s = AW_RUN_QUEUED;
	aw_run_state_parse(r->state, &s);
	const char *icon = s == AW_RUN_SUCCEEDED			 ? "\xe2\x9c\x85"
			   : s == AW_RUN_FAILED || s == AW_RUN_CANCELLED ? "\xe2\x9d\x8c"
			   : s == AW_RUN_WAITING_APPROVAL		 ? "\xe2\x9c\x8b"
			   : s == AW_RUN_SUGGESTED			 ? "\xf0\x9f\x92\xa1"
									 : "\xe2\x8f\xb3";
	snprintf(out, cap, "%s Run %s: %s, %d of %d steps done%s%s", icon, sid, r->state, done,
		 total, r->error_code[0] ? ", error " : "", r->error_code);
}

static aw_err feedback_run(aw_hub *h, aw_txn *t, const aw_ctx *ctx, int interval_s,
			   const aw_conv_run *cr, aw_error *err)
{
	aw_run r;
	aw_run_step *st = NULL;
	int n = 0;
	aw_err e = aw_run_get(h->o.store, ctx, cr->run_id, &r, &st, &n, err);
	if (e == AW_E_RUN_NOT_FOUND)
		return aw_store_conv_run_set(t, cr->run_id, -2, NULL, cr->prompted, 1, err);
	if (e)
		return e;
	int done, total;
	steps_done(&r, st, n, &done, &total);
	char text[512];
	progress_text(&r, done, total, text, sizeof text);
	aw_run_state s = AW_RUN_QUEUED;
	aw_run_state_parse(r.state, &s);
	int terminal = aw_run_state_terminal(s);
	int64_t now = now_ms();
	json_t *last = json_object_get(h->edits, cr->run_id);
	int due = !last || now - json_integer_value(last) >= (int64_t)interval_s * 1000;
	int prompted = cr->prompted;
	if (cr->progress_id == 0) { /* the progress message, once */
		e = queue(t, cr->bot, cr->chat_id, "send", "progress", text, NULL, NULL, cr->run_id,
			  NULL, NULL, err);
		if (!e)
			e = aw_store_conv_run_set(t, cr->run_id, -1, text, prompted, 0, err);
		json_object_set_new(h->edits, cr->run_id, json_integer(now));
	} else if (cr->progress_id > 0 && strcmp(text, cr->last_text) && (due || terminal)) {
		char target[32];
		snprintf(target, sizeof target, "%lld", (long long)cr->progress_id);
		e = queue(t, cr->bot, cr->chat_id, "edit", "progress", text, NULL, target,
			  cr->run_id, NULL, NULL, err);
		if (!e)
			e = aw_store_conv_run_set(t, cr->run_id, -2, text, prompted, 0, err);
		json_object_set_new(h->edits, cr->run_id, json_integer(now));
	}
	if (!e && s == AW_RUN_WAITING_APPROVAL && !prompted && n > 0) {
		char data_a[64], data_d[64], msg[700];
		snprintf(data_a, sizeof data_a, "ap:%s:a", r.run_id);
		snprintf(data_d, sizeof data_d, "ap:%s:d", r.run_id);
		json_t *res = st[n - 1].result ? json_loads(st[n - 1].result, 0, NULL) : NULL;
		const char *sum = json_string_value(json_object_get(res, "summary"));
		snprintf(msg, sizeof msg, "Run %s waits for approval%s%.500s", r.run_id,
			 sum ? ": " : ".", sum ? sum : "");
		json_decref(res);
		json_t *kb = json_pack("{s:[[{s:s, s:s}, {s:s, s:s}]]}", "inline_keyboard", "text",
				       "Approve", "callback_data", data_a, "text", "Deny",
				       "callback_data", data_d);
		e = queue(t, cr->bot, cr->chat_id, "send", "prompt", msg, kb, NULL, cr->run_id,
			  NULL, NULL, err);
		json_decref(kb);
		prompted = 1;
		if (!e)
			e = aw_store_conv_run_set(t, cr->run_id, -2, NULL, prompted, 0, err);
	}
	if (!e && terminal) {
		char msg[3800];
		char *res = n > 0 && st[n - 1].result ? st[n - 1].result : NULL;
		if (s == AW_RUN_SUCCEEDED)
			snprintf(msg, sizeof msg, "Run %s succeeded.%s%.3000s", r.run_id,
				 res ? "\nResult: " : "", res ? res : "");
		else if (s == AW_RUN_SUGGESTED)
			snprintf(msg, sizeof msg,
				 "Run %s: suggest mode, nothing was executed.\n%.3000s", r.run_id,
				 res ? res : "");
		else
			snprintf(msg, sizeof msg, "Run %s %s%s%s.", r.run_id, r.state,
				 r.error_code[0] ? ": " : "", r.error_code);
		e = queue(t, cr->bot, cr->chat_id, "send", "final", msg, NULL, NULL, cr->run_id,
			  NULL, NULL, err);
		if (!e)
			e = aw_store_conv_run_set(t, cr->run_id, -2, NULL, prompted, 1, err);
		json_object_del(h->edits, cr->run_id);
	}
	aw_run_free(&r);
	aw_run_steps_free(st, n);
	return e;
}

/* ---- sending ---- */

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
		if (now_ms() - s->last_ms > 60000) { /* stale: reuse */
			memcpy(s->key, key, sizeof key);
			s->last_ms = 0;
			return s;
		}
	}
	return NULL;
}

static int bot_budget(hub_bot *b, int per_s)
{
	int64_t now = now_ms(), in_window = 0;
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
		if (!c || now_ms() - json_integer_value(json_object_get(c, "at")) >=
				  (int64_t)FP_TTL_S * 1000)
			return 0;
		snprintf(holder, AW_UUID_STR_LEN + 1, "%s",
			 json_string_value(json_object_get(c, "id")) ?: "");
		return 1;
	}
	aw_ctx ctx;
	aw_ctx_system(&ctx, b->project);
	const char *vals[] = {fp};
	char *v = NULL;
	aw_error err = {0};
	if (aw_kv_get(h->o.kv, &ctx, "tg_sent", vals, 1, &v, &err))
		return -1;
	if (v)
		snprintf(holder, AW_UUID_STR_LEN + 1, "%s", v);
	free(v);
	return v != NULL;
}

/* Takes the fingerprint for m: only if nobody holds it (nx; *taken says
 * whether it did), or over a holder whose message was not sent. */
static aw_err fp_take(aw_hub *h, const hub_bot *b, const aw_outbound *m, int nx, int *taken)
{
	*taken = 1;
	if (!h->o.kv) {
		char key[AW_PROJECT_MAX + 70], held[AW_UUID_STR_LEN + 1];
		snprintf(key, sizeof key, "%s/%s", b->project, m->fingerprint);
		int64_t now = now_ms();
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
	}
	json_decref(markup);
	json_t *res = NULL;
	aw_tg_status st;
	aw_error err = {0};
	aw_err e = aw_tg_call(h->api, token, method, p, 15, &h->quit, &res, &st, &err);
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

static hub_bot *bot_named(aw_hub *h, const char *project, const char *name)
{
	for (hub_bot *b = h->bots; b; b = b->next)
		if (!strcmp(b->project, project) && !strcmp(b->name, name))
			return b;
	return NULL;
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

static void send_project(aw_hub *h, const char *project)
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
	for (int i = 0; i < n && may_send(h) && !stopping(h); i++) {
		aw_outbound *m = &ms[i];
		char ck[sizeof blocked[0]];
		snprintf(ck, sizeof ck, "%s/%s", m->bot, m->chat_id);
		int skip = 0;
		for (int k = 0; k < nb; k++)
			skip |= !strcmp(blocked[k], ck);
		if (skip)
			continue;
		pthread_mutex_lock(&h->mu);
		hub_bot *b = bot_named(h, project, m->bot);
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
		    (cs && now_ms() - cs->last_ms < h->o.per_chat_ms + JITTER_MS) ||
		    (!answer && !bot_budget(b, h->o.per_bot_per_s))) {
			if (nb < 64)
				snprintf(blocked[nb++], sizeof blocked[0], "%s", ck);
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
				snprintf(blocked[nb++], sizeof blocked[0], "%s", ck);
			continue;
		}
		aw_buf tok = AW_BUF_INIT(4096);
		if (resolve_token(&h->o, b, &tok, &err)) {
			aw_secret_wipe(&tok);
			fp_drop(h, b, m);
			mark(h, project, m, "pending", "", err.msg, 0);
			continue;
		}
		if (!answer) {
			cs->last_ms = now_ms();
			b->sent_ms[b->sent_next++ % 64] = cs->last_ms;
		}
		deliver(h, b, m, aw_buf_str(&tok), state, next_at, error, &tg_id);
		aw_secret_wipe(&tok);
		if (strcmp(state, "sent"))
			fp_drop(h, b, m); /* not delivered: a retry (or the same text) may be */
		mark(h, project, m, state, next_at, error, tg_id);
		if (!strcmp(state, "pending") && nb < 64)
			snprintf(blocked[nb++], sizeof blocked[0], "%s", ck);
	}
	aw_outbound_free(ms, n);
}

static void *work(void *arg)
{
	aw_hub *h = arg;
	int64_t last_feedback = 0;
	while (!stopping(h)) {
		if (!may_send(h)) {
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
				snprintf(projects[np++], sizeof projects[0], "%s", b->project);
		}
		pthread_mutex_unlock(&h->mu);
		int feedback = now_ms() - last_feedback >= 250;
		for (int i = 0; feedback && i < np; i++) {
			aw_ctx ctx;
			aw_ctx_system(&ctx, projects[i]);
			aw_error err = {0};
			aw_txn *t = NULL;
			aw_conv_run *rs = NULL;
			int nr = 0;
			if (aw_store_begin(h->o.store, &ctx, AW_TXN_WRITE, &t, &err))
				continue;
			aw_err e = aw_store_conv_runs_open(t, &rs, &nr, &err);
			for (int k = 0; !e && k < nr; k++) {
				pthread_mutex_lock(&h->mu);
				hub_bot *b = bot_named(h, projects[i], rs[k].bot);
				int iv = b ? b->interval_s : 30;
				pthread_mutex_unlock(&h->mu);
				e = feedback_run(h, t, &ctx, iv, &rs[k], &err);
			}
			free(rs);
			if (e)
				aw_store_rollback(t);
			else
				aw_store_commit(t, &err);
		}
		if (feedback)
			last_feedback = now_ms();
		for (int i = 0; i < np; i++)
			send_project(h, projects[i]);
		aw_metrics_loop_tick("channel_work");
		nap(h, h->o.tick_ms);
	}
	return NULL;
}

/* ---- life ---- */

aw_err aw_hub_start(const aw_hub_opts *o, aw_hub **out, aw_error *err)
{
	aw_hub *h = calloc(1, sizeof *h);
	if (!h || !(h->edits = json_object()) || !(h->sent_fp = json_object())) {
		if (h)
			json_decref(h->edits);
		free(h);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	h->o = *o;
	snprintf(h->api, sizeof h->api, "%s",
		 o->api_base ? o->api_base : "https://api.telegram.org");
	snprintf(h->contract, sizeof h->contract, "%s",
		 o->contract_id ? o->contract_id : "default");
	snprintf(h->webhook_base, sizeof h->webhook_base, "%s",
		 o->webhook_base ? o->webhook_base : "");
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
		json_decref(h->edits);
		json_decref(h->sent_fp);
		free(h);
		return aw_fail(err, AW_E_INTERNAL, "cannot start the channel hub");
	}
	if (pthread_create(&h->work_th, NULL, work, h)) {
		pthread_mutex_lock(&h->mu);
		h->stopping = 1;
		pthread_cond_broadcast(&h->cv);
		pthread_mutex_unlock(&h->mu);
		pthread_join(h->lead_th, NULL);
		json_decref(h->edits);
		json_decref(h->sent_fp);
		free(h);
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
	pthread_mutex_lock(&h->mu);
	h->stopping = 1;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	pthread_join(h->work_th, NULL);
	pthread_join(h->lead_th, NULL);
	json_decref(h->edits);
	json_decref(h->sent_fp);
	while (h->graveyard) {
		hub_bot *b = h->graveyard;
		h->graveyard = b->next;
		bot_free(b);
	}
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	free(h);
}

/* ---- webhook mode ---- */

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
			b = bot_from(project, &pol, ch);
	aw_policy_release(&pol);
	if (!b || !b->webhook) {
		if (b)
			bot_free(b);
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
	pending *p = e ? NULL : calloc(1, sizeof *p);
	if (!e && !p)
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	if (!e && !(e = aw_tg_update_parse(u, &p->u, err))) {
		act(o, b, p);
		e = commit_batch(o, b, 0, p, 1, 0, err);
	}
	if (p)
		free(p->redacted);
	free(p);
	json_decref(u);
	bot_free(b);
	return e;
}
